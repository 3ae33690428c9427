// OpenAI's POST /v1/embeddings and TEI's POST /embed: one vector per input (or per chunk of an
// input, late chunking), in the embedding types of api.h. Bodies are parsed by api.cc; here they
// are checked, tokenized, run on the workers and answered.
#include "gateway/route_handlers.h"

namespace stamen::gateway {

using server::WorkKind;

namespace {

// 400 for int8 / uint8 of vectors that are not unit length (their calibration range).
std::optional<ApiError> CheckQuantizable(EmbeddingType type, bool normalized) {
  if (normalized || (type != EmbeddingType::kInt8 && type != EmbeddingType::kUint8)) return std::nullopt;
  return ApiError{400, std::string("int8 and uint8 embeddings are calibrated to unit-length vectors ([-1, 1] per "
                                   "dimension): ask for \"") + std::string(EmbeddingTypeName(type)) +
                           "\" with \"normalize\": true"};
}

void Embed(Inference& model, const http::Request& request, bool openai, Reply respond) {
  auto parsed = ParseEmbedCall(request.body, openai);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond.Error(*error);
  auto call = std::make_shared<EmbedCall>(std::move(std::get<EmbedCall>(parsed)));
  if (auto error = model.NeedEmbedder(openai ? "/v1/embeddings" : "/embed")) return respond.Error(*error);
  if (auto error = model.CheckBatchSize(call->inputs.size(), "inputs")) return respond.Error(*error);
  size_t chunk_count = 0;
  for (const auto& chunks : call->chunks) chunk_count += chunks.size();
  if (auto error = model.CheckBatchSize(chunk_count, "chunks")) return respond.Error(*error);
  if (auto error = model.CheckDimensions("dimensions", call->dimensions)) return respond.Error(*error);
  if (auto error = CheckQuantizable(call->encoding, openai || call->normalize)) return respond.Error(*error);
  auto task = ResolveTask(model.config(), call->task);
  if (auto* error = std::get_if<ApiError>(&task)) return respond.Error(*error);
  auto prompt = model.TaskPrompt(std::get<TaskAdapter>(task), call->prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return respond.Error(*error);
  const bool truncate = model.Truncates(call->truncate);

  auto late = std::make_shared<LateChunks>();
  auto tokenize = [&model, call, prompt = std::get<std::string>(prompt), adapter = std::get<TaskAdapter>(task).index,
                   truncate, openai, late](engine::ModelTokenizer& tokenizer, Job& job) {
    const bool late_chunking = !call->chunks.empty() || call->chunking;
    auto error = late_chunking ? model.TokenizeChunks(tokenizer, *call, prompt, job, &late->chunks, &late->rows)
                               : model.TokenizeInputs(tokenizer, call->inputs, prompt, truncate, call->truncation_direction, job);
    job.set_kind(WorkKind::kEmbed);
    job.set_pooling(model.options().pooling);
    job.set_normalize(openai ? true : call->normalize);
    job.set_dimensions(call->dimensions);
    job.set_adapter(adapter);
    job.set_priority(model.PriorityOf(call->priority, call->inputs.size()));
    return error;
  };
  auto answer = [&model, call, late, openai](const FinishedRows& done) {
    return EmbeddingsBody(*call, openai, model.model_id(), done, *late);
  };
  model.Run(request, model.LeastTokensOf(call->inputs), std::move(tokenize), std::move(answer), std::move(respond));
}

}  // namespace

void AddEmbedRoutes(RouteTable& routes, Inference& model) {
  using enum ApiFamily;
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  routes.Add({
      {"/v1/embeddings", "POST", kOpenAI, true, false, OnModel(model, Embed, /*openai=*/true)},
      {"/embeddings", "POST", kOpenAI, true, false, OnModel(model, Embed, /*openai=*/true)},
      {"/embed", "POST", kTei, true, false, OnModel(model, Embed, /*openai=*/false)},
  });
}

}  // namespace stamen::gateway
