// Cohere's v2 embed route (POST /v2/embed, what cohere.ClientV2.embed posts): bodies are parsed
// and written by cohere_api.cc; here they are tokenized, run on the workers and answered with
// every embedding type asked for, all from the one float result. (/v2/rerank is in
// rerank_routes.cc.)
#include <algorithm>

#include "gateway/cohere_api.h"
#include "gateway/least_tokens.h"
#include "gateway/route_handlers.h"

namespace stamen::gateway {

using server::WorkKind;

namespace {

void CohereEmbed(Inference& model, const http::Request& request, Reply reply) {
  auto parsed = ParseCohereEmbedCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  auto call = std::make_shared<CohereEmbedCall>(std::move(std::get<CohereEmbedCall>(parsed)));
  if (auto error = model.NeedEmbedder("/v2/embed")) return reply.Error(*error);
  if (auto error = model.CheckBatchSize(call->texts.size(), "texts")) return reply.Error(*error);
  if (auto error = model.CheckDimensions("output_dimension", call->output_dimension)) return reply.Error(*error);
  int64_t least_tokens = 0;
  const int64_t most = call->max_tokens > 0 ? std::min(call->max_tokens, model.max_input_length()) : model.max_input_length();
  for (const std::string& text : call->texts) least_tokens += LeastTokens(text, most);
  // The task named, else the one the input_type stands for (a model with task adapters), with
  // its prompt; else the input_type's prompt of the model's config, else the server's default.
  auto task = ResolveTask(model.config(), call->task.empty() ? TaskForInputType(model.config(), call->input_type) : call->task);
  if (auto* error = std::get_if<ApiError>(&task)) return reply.Error(*error);
  const TaskAdapter& adapter = std::get<TaskAdapter>(task);
  auto prompt = adapter.index >= 0 ? std::variant<std::string, ApiError>(adapter.prompt)
                                   : model.Prompt(PromptNameForInputType(model.sentence_transformers(), call->input_type));
  if (auto* error = std::get_if<ApiError>(&prompt)) return reply.Error(*error);
  auto tokenize = [&model, call, prompt = std::get<std::string>(prompt), adapter = adapter.index](
                      engine::ModelTokenizer& tokenizer, Job& job) {
    job.set_kind(WorkKind::kEmbed);
    job.set_pooling(model.options().pooling);
    job.set_normalize(true);  // Cohere's embeddings are unit length; int8 / uint8 are calibrated to that
    job.set_dimensions(call->output_dimension);
    job.set_adapter(adapter);
    job.set_priority(model.PriorityOf(call->priority, call->texts.size()));
    const std::vector<Input> inputs(call->texts.begin(), call->texts.end());
    return model.TokenizeInputs(tokenizer, inputs, prompt, call->truncate, call->truncation_direction, job, call->max_tokens);
  };
  auto answer = [call](const FinishedRows& done) { return CohereEmbedBody(*call, done); };
  model.Run(request, least_tokens, std::move(tokenize), std::move(answer), std::move(reply));
}

}  // namespace

void AddCohereRoutes(RouteTable& routes, Inference& model) {
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  routes.Add({{"/v2/embed", "POST", ApiFamily::kCohere, true, false, OnModel(model, CohereEmbed)}});
}

}  // namespace stamen::gateway
