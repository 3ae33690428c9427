// Text Embeddings Inference's routes beyond /embed, /rerank, /tokenize and /decode: the
// catch-all POST / (and SageMaker's /invocations), /predict, /similarity, /embed_all and
// /embed_sparse, and the body of GET /info. Bodies are parsed and written by tei_api.cc; here
// they are tokenized, run on the workers and answered.
#include <algorithm>

#include "gateway/bge_m3_outputs.h"
#include "gateway/least_tokens.h"
#include "gateway/route_handlers.h"
#include "gateway/tei_api.h"
#include "model_folder/model_options.h"

namespace stamen::gateway {

using server::WorkKind;

namespace {

// The route TEI's catch-all POST / answers as: the one the body's shape and the model call for.
std::string_view RootPath(const Inference& model, std::string_view body) {
  switch (RootTask(model.kind(), body)) {
    case TeiTask::kEmbed: return model.splade() ? "/embed_sparse" : "/embed";
    case TeiTask::kSimilarity: return "/similarity";
    case TeiTask::kRerank: return "/rerank";
    case TeiTask::kPredict: break;
  }
  return "/predict";
}

void Predict(Inference& model, const http::Request& request, Reply reply) {
  auto parsed = ParsePredictCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  auto call = std::make_shared<PredictCall>(std::move(std::get<PredictCall>(parsed)));
  if (auto error = model.NeedClassifier("classifier")) return reply.Error(*error);
  if (auto error = model.CheckBatchSize(call->sequences.size(), "inputs")) return reply.Error(*error);
  const bool has_pair = std::any_of(call->sequences.begin(), call->sequences.end(),
                                    [](const PredictCall::Sequence& sequence) { return sequence.second.has_value(); });
  if (call->truncation_direction == Truncation::kLeft && has_pair) {
    // A pair is cut longest-first from the right, as transformers does.
    return reply.Error({400, "'truncation_direction' \"left\" applies to single texts; pairs are truncated longest-first"});
  }
  int64_t least_tokens = 0;
  for (const PredictCall::Sequence& sequence : call->sequences) {
    const int64_t words = LeastTokens(sequence.first, 0) + (sequence.second ? LeastTokens(*sequence.second, 0) : 0);
    least_tokens += std::min(words, model.max_input_length());
  }
  const bool truncate = model.Truncates(call->truncate);
  auto tokenize = [&model, call, truncate](engine::ModelTokenizer& tokenizer, Job& job) {
    std::vector<Inference::ScoredText> texts;
    for (const auto& sequence : call->sequences) {
      texts.push_back({sequence.first, sequence.second ? std::optional<std::string_view>(*sequence.second) : std::nullopt});
    }
    job.set_priority(model.ScoringPriorityOf(call->priority, call->sequences.size()));
    return model.TokenizeScored(tokenizer, texts, truncate, call->truncation_direction, "input", job);
  };
  auto answer = [&model, call](const FinishedRows& done) {
    return PredictBody(*call, done, model.config().id2label);
  };
  model.Run(request, least_tokens, std::move(tokenize), std::move(answer), std::move(reply));
}

void Similarity(Inference& model, const http::Request& request, Reply reply) {
  auto parsed = ParseSimilarityCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  const SimilarityCall& similarity = std::get<SimilarityCall>(parsed);
  if (auto error = model.NeedEmbedder("/similarity")) return reply.Error(*error);
  if (auto error = model.CheckBatchSize(similarity.sentences.size() + 1, "sentences (with the source sentence)")) {
    return reply.Error(*error);
  }
  auto task = ResolveTask(model.config(), similarity.task);
  if (auto* error = std::get_if<ApiError>(&task)) return reply.Error(*error);
  auto prompt = model.TaskPrompt(std::get<TaskAdapter>(task), similarity.prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return reply.Error(*error);
  // The source sentence is input 0, the sentences follow.
  auto inputs = std::make_shared<std::vector<Input>>();
  inputs->emplace_back(similarity.source_sentence);
  for (const std::string& sentence : similarity.sentences) inputs->emplace_back(sentence);
  const bool truncate = model.Truncates(similarity.truncate);
  const Truncation direction = similarity.truncation_direction;
  const server::Priority priority = model.PriorityOf(similarity.priority, inputs->size());
  auto tokenize = [&model, inputs, prompt = std::get<std::string>(prompt), adapter = std::get<TaskAdapter>(task).index,
                   truncate, direction, priority](engine::ModelTokenizer& tokenizer, Job& job) {
    job.set_kind(WorkKind::kEmbed);
    job.set_pooling(model.options().pooling);
    job.set_adapter(adapter);
    job.set_priority(priority);
    return model.TokenizeInputs(tokenizer, *inputs, prompt, truncate, direction, job);
  };
  auto answer = [](const FinishedRows& done) { return SimilarityBody(done); };
  model.Run(request, model.LeastTokensOf(*inputs), std::move(tokenize), std::move(answer), std::move(reply));
}

// What /embed_all and /embed_sparse share: TEI's embed body parsed, its inputs tokenized and
// run as `kind` with `pooling`, not normalised, and answered by `answer` from the rows.
void EmbedRows(Inference& model, const http::Request& request, WorkKind kind,
               std::optional<engine::ops::PoolingMode> pooling, Inference::AnswerJob answer, Reply reply) {
  auto parsed = ParseEmbedCall(request.body, /*openai=*/false);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  EmbedCall& call = std::get<EmbedCall>(parsed);
  if (auto error = model.NeedEmbedder(request.path, kind == WorkKind::kEmbed)) return reply.Error(*error);
  auto task = ResolveTask(model.config(), call.task);
  if (auto* error = std::get_if<ApiError>(&task)) return reply.Error(*error);
  auto prompt = model.TaskPrompt(std::get<TaskAdapter>(task), call.prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return reply.Error(*error);
  Inference::TokenRowsJob job{.inputs = std::move(call.inputs),
                              .prompt = std::get<std::string>(prompt),
                              .truncate = model.Truncates(call.truncate),
                              .direction = call.truncation_direction,
                              .priority = call.priority,
                              .kind = kind,
                              .pooling = pooling,
                              .adapter = std::get<TaskAdapter>(task).index};
  model.RunTokenRows(request, std::move(job), std::move(answer), std::move(reply));
}

void EmbedAll(Inference& model, const http::Request& request, Reply reply) {
  // [[float] per token] per input: the last hidden state, special tokens included.
  EmbedRows(model, request, WorkKind::kTokenEmbed, std::nullopt, [](const FinishedRows& done) { return EmbedAllBody(done); },
            std::move(reply));
}

void EmbedSparse(Inference& model, const http::Request& request, Reply reply) {
  if (model.bge_m3()) {
    // [{index, value}] per input: bge-m3's lexical weights.
    return EmbedRows(model, request, WorkKind::kDenseSparseColbert, std::nullopt, [&model](const FinishedRows& done) {
      return BgeM3SparseBody(done, model.config().hidden_size, model.bge_m3_dropped_ids());
    }, std::move(reply));
  }
  if (!model.splade()) {
    return reply.Error({400, "model " + model.model_id() + " has no SPLADE pooling: /embed_sparse needs a …ForMaskedLM model "
                             "with a SpladePooling module (or --pooling splade)"});
  }
  // [{index, value}] per input: the SPLADE vector's non-zero entries, by vocabulary id.
  EmbedRows(model, request, WorkKind::kEmbed, engine::ops::PoolingMode::kSplade,
            [](const FinishedRows& done) { return SpladeSparseBody(done); }, std::move(reply));
}

}  // namespace

void AddTeiRoutes(RouteTable& routes, Inference& model) {
  using enum ApiFamily;
  // Every model has the routes the catch-all answers as (each refuses a model it does not fit).
  auto root = [&routes, &model](const http::Request& request, Reply reply) {
    const Route* route = routes.Find(RootPath(model, request.body), "POST");
    // Every model's table holds the catch-all's targets; one missing is a bug, answered, not a crash.
    if (route == nullptr) return reply.Error({500, "no route answers this body as POST /", "server_error"});
    route->handler(request, std::move(reply));
  };
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  routes.Add({
      {"/predict", "POST", kTei, true, false, OnModel(model, Predict)},
      {"/similarity", "POST", kTei, true, false, OnModel(model, Similarity)},
      {"/embed_all", "POST", kTei, true, false, OnModel(model, EmbedAll)},
      {"/embed_sparse", "POST", kTei, true, false, OnModel(model, EmbedSparse)},
      // TEI's catch-all (what huggingface_hub's InferenceClient posts to) and SageMaker's.
      {"/", "POST", kTei, true, false, root},
      {"/invocations", "POST", kTei, true, false, root},
  });
}

std::string InfoBody(const Inference& model) {
  const std::optional<v1::InfoResponse> worker_info = model.WorkerInfo();
  const GatewayOptions& options = model.options();
  std::string body = "{\"model_id\":";
  AppendJsonString(body, model.model_id());
  body += ",\"architecture\":";
  AppendJsonString(body, model.config().architecture);
  body += ",\"model_dtype\":";
  AppendJsonString(body, worker_info ? worker_info->dtype() : "unknown");
  body += ",\"served_model_name\":";
  AppendJsonString(body, model.model_id());
  // TEI's ModelType: a one-label head is a reranker, a head of several labels a classifier;
  // an embedding model names the pooling in force, and a multi-vector (ColBERT) model "none":
  // it pools nothing and refuses the pooled routes.
  body += ",\"model_type\":";
  if (model.reranker()) {
    body += model.kind() == ModelKind::kReranker ? "{\"reranker\":{\"id2label\":{" : "{\"classifier\":{\"id2label\":{";
    for (size_t i = 0; i < model.config().id2label.size(); ++i) {
      body += (i ? ",\"" : "\"") + std::to_string(i) + "\":";
      AppendJsonString(body, model.config().id2label[i]);
    }
    body += "},\"label2id\":{";
    for (size_t i = 0; i < model.config().id2label.size(); ++i) {
      body += i ? "," : "";
      AppendJsonString(body, model.config().id2label[i]);
      body += ':' + std::to_string(i);
    }
    body += "}}}";
  } else {
    body += "{\"embedding\":{\"pooling\":";
    AppendJsonString(body, model.multi_vector() ? "none" : engine::PoolingOptionName(model.pooling()));
    body += "}}";
  }
  body += ",\"backend\":";
  AppendJsonString(body, worker_info ? worker_info->backend() : "unknown");
  if (worker_info && !worker_info->gpu().empty()) {
    body += ",\"gpu\":";
    AppendJsonString(body, worker_info->gpu());
  }
  if (worker_info && worker_info->has_cpu()) {
    body += ",\"cpu\":{\"kernels\":";
    AppendJsonString(body, worker_info->cpu().kernels());
    body += ",\"gemm\":";
    AppendJsonString(body, worker_info->cpu().gemm());
    body += ",\"features\":";
    AppendJsonString(body, worker_info->cpu().features());
    body += '}';
  }
  body += ",\"dimensions\":" + std::to_string(model.dimensions());
  body += ",\"max_input_length\":" + std::to_string(model.max_input_length());
  body += ",\"max_concurrent_requests\":" + std::to_string(options.max_concurrent_requests);
  body += ",\"max_client_batch_size\":" + std::to_string(options.max_client_batch_size);
  body += ",\"max_batch_tokens\":" + std::to_string(worker_info ? worker_info->max_batch_tokens() : 0);
  body += ",\"payload_limit\":" + std::to_string(options.payload_limit);
  body += std::string(",\"auto_truncate\":") + (options.auto_truncate ? "true" : "false");
  body += ",\"tokenization_workers\":" + std::to_string(model.tokenization_threads());
  body += ",\"workers\":" + std::to_string(model.worker_count());
  body += ",\"prompts\":{";
  bool first = true;
  for (const auto& [name, text] : model.sentence_transformers().prompts) {
    body += first ? "" : ",";
    first = false;
    AppendJsonString(body, name);
    body += ':';
    AppendJsonString(body, text);
  }
  body += '}';
  // The task adapters a request may name in "task" (jina-embeddings-v3), with their prompts.
  if (!model.config().adapter_tasks.empty()) {
    body += ",\"tasks\":{";
    for (size_t task = 0; task < model.config().adapter_tasks.size(); ++task) {
      if (task) body += ',';
      AppendJsonString(body, model.config().adapter_tasks[task]);
      body += ':';
      AppendJsonString(body, model.config().adapter_prompts[task]);
    }
    body += '}';
  }
  body += ",\"version\":\"";
  body += STAMEN_VERSION;  // CMake's project version
  body += "\"}";
  return body;
}

}  // namespace stamen::gateway
