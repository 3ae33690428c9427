#include "gateway/gateway.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <thread>

#include "model_folder/bge_m3.h"
#include "model_folder/model_options.h"
#include "gateway/cohere_api.h"
#include "gateway/late_chunking.h"
#include "gateway/least_tokens.h"
#include "gateway/openapi.h"
#include "server/request_validation.h"

namespace stamen::gateway {

namespace {

using Clock = std::chrono::steady_clock;
using server::WorkKind;
using server::WorkRequest;

constexpr const char* kVersion = STAMEN_VERSION;  // CMake's project version

// Compares secrets in time independent of where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  const size_t length = std::max(a.size(), b.size());
  for (size_t i = 0; i < length; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= x ^ y;
  }
  return difference == 0;
}

// The credentials of an `Authorization: Bearer <token>` header, or empty. The scheme's name is
// case-insensitive (RFC 9110, 11.1), so "bearer" and "BEARER" are taken too.
std::string_view BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  return token;
}

double Milliseconds(Clock::duration duration) { return std::chrono::duration<double, std::milli>(duration).count(); }

std::string TooLongMessage(const std::string& what, size_t tokens, int64_t limit) {
  return what + " has " + std::to_string(tokens) + " tokens; the model takes at most " + std::to_string(limit) +
         ". Shorten it, send \"truncate\": true, or start the server with --auto-truncate";
}

}  // namespace

namespace {

// What a gateway reads of its model folder, checked against its options.
struct ModelDescription {
  engine::ModelConfig config;
  engine::SentenceTransformersConfig sentence_transformers;
  engine::YesNoTemplate yes_no_template;  // a yes/no reranker's; empty otherwise
  engine::ops::PoolingMode pooling;       // what embeddings pool with: --pooling, else the model's
};

StatusOr<ModelDescription> DescribeModel(const GatewayOptions& options) {
  ModelDescription model;
  auto folder = engine::ReadModelFolder(options.model_dir);
  if (!folder.ok()) return folder.status();
  model.config = std::move(folder->config);
  model.sentence_transformers = std::move(folder->sentence_transformers);
  // As the worker's engine decides it (engine::Engine::Load), so both see the same scorer.
  STAMEN_RETURN_IF_ERROR(engine::ResolveYesNoReranker(options.model_dir, options.yes_no_reranker,
                                                      model.sentence_transformers, &model.config));
  if (!model.config.yes_no_token_ids.empty()) {
    auto prompt = engine::ReadYesNoTemplate(options.model_dir, model.config.family, options.yes_no_instruction);
    if (!prompt.ok()) return prompt.status();
    model.yes_no_template = std::move(prompt.value());
  } else if (!options.yes_no_instruction.empty()) {
    return Status::Error("--instruction applies to yes/no rerankers only, not " + model.config.architecture);
  }
  model.pooling = options.pooling.value_or(engine::DefaultPooling(model.config, model.sentence_transformers)
                                               .value_or(engine::ops::PoolingMode::kCls));
  // Refused at start rather than by every request the worker would fail.
  STAMEN_RETURN_IF_ERROR(engine::CheckPoolingFitsModel(model.config, model.pooling));
  if (!options.default_prompt_name.empty() &&
      !engine::FindPrompt(model.sentence_transformers, options.default_prompt_name)) {
    return Status::Error("--default-prompt-name '" + options.default_prompt_name +
                         "' is not a prompt of the model's config_sentence_transformers.json");
  }
  return model;
}

// Ok when the worker `info` came from serves the model the gateway read: the same
// architecture, and what the worker validates requests with (server::ModelLimits) equal to the
// gateway's profile of its folder.
Status CheckWorkerServes(const v1::InfoResponse& info, const std::string& address, const std::string& architecture,
                         const engine::ModelProfile& profile) {
  const server::ModelLimits limits = server::ModelLimits::Of(profile);
  const bool same = info.architecture() == architecture &&
                    static_cast<int64_t>(info.dimensions()) == limits.embedding_width &&
                    static_cast<int64_t>(info.max_input_length()) == limits.max_sequence_length &&
                    static_cast<int64_t>(info.num_labels()) == limits.num_labels &&
                    static_cast<int64_t>(info.vocabulary_size()) == limits.vocabulary_size;
  if (same) return Status();
  return Status::Error("worker " + address + " serves " + info.model_id() + " (" + info.architecture() + ", " +
                       std::to_string(info.dimensions()) + " dimensions, " + std::to_string(info.num_labels()) +
                       " labels, at most " + std::to_string(info.max_input_length()) + " tokens), not the gateway's model (" +
                       architecture + ", " + std::to_string(limits.embedding_width) + " dimensions, " +
                       std::to_string(limits.num_labels) + " labels, at most " +
                       std::to_string(limits.max_sequence_length) + " tokens): start both on the same model folder "
                       "with the same --yes-no-reranker");
}

}  // namespace

Status Gateway::CheckModel(const GatewayOptions& options) { return DescribeModel(options).status(); }

StatusOr<std::unique_ptr<Gateway>> Gateway::Start(const GatewayOptions& options, metrics::Registry& registry) {
  auto gateway = Create(options, registry);
  if (!gateway.ok()) return gateway.status();
  Gateway* self = gateway->get();
  auto server = StartHttp(options, *self->routes_, [self](http::Request request, http::Respond respond) {
    self->Handle(std::move(request), std::move(respond));
  }, [self](std::string_view origin) { return self->AllowedOrigin(origin); });
  if (!server.ok()) return server.status();
  self->http_ = std::move(server.value());
  self->LogStart(self->http_->port());
  return gateway;
}

StatusOr<std::unique_ptr<http::Server>> Gateway::StartHttp(const GatewayOptions& options, const RouteTable& routes,
                                                           http::Handler handler,
                                                           std::function<std::string(std::string_view)> allowed_origin) {
  http::ServerOptions http_options;
  http_options.host = options.host;
  http_options.port = options.port;
  http_options.threads = options.http_threads;
  http_options.body_limit = options.payload_limit;
  // A body over the payload limit is refused before it reaches Handle: in its route's shape too.
  http_options.error_response = [&routes, allowed_origin](std::string_view path, std::string_view origin, int status,
                                                           std::string_view message, std::string_view type) {
    const Route* route = routes.FindPath(path);
    http::Response response =
        ErrorResponse({status, std::string(message), std::string(type)}, route ? route->family : ApiFamily::kOpenAI);
    AddOriginHeaders(allowed_origin(origin), response);
    return response;
  };
  return http::Server::Start(http_options, std::move(handler));
}

void Gateway::LogStart(uint16_t port) const {
  spdlog::info("gateway: {} ({}, {}) on http://{}:{} with {} tokenization threads, {} worker(s)", model_id_,
               config_.architecture, reranker_ ? "reranker" : std::to_string(dimensions_) + " dimensions",
               options_.host, port, tokenizers_.size(), dispatcher_->workers().size());
}

StatusOr<std::unique_ptr<Gateway>> Gateway::Create(const GatewayOptions& options, metrics::Registry& registry) {
  auto gateway = std::unique_ptr<Gateway>(new Gateway(registry));
  Gateway& g = *gateway;
  g.options_ = options;
  auto model = DescribeModel(options);
  if (!model.ok()) return model.status();
  g.config_ = std::move(model->config);
  g.sentence_transformers_ = std::move(model->sentence_transformers);
  g.yes_no_template_ = std::move(model->yes_no_template);
  const engine::ModelProfile profile = engine::ProfileOf(g.config_, g.sentence_transformers_);
  g.profile_ = profile;
  g.max_input_length_ = profile.max_sequence_length;
  g.pooling_ = model->pooling;
  g.splade_ = model->pooling == engine::ops::PoolingMode::kSplade;
  g.dimensions_ = profile.EmbeddingWidthWith(model->pooling);
  g.reranker_ = profile.kind != ModelKind::kEmbedding;
  g.kind_ = profile.kind;
  g.created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  g.model_id_ = engine::ModelIdOf(options.model_dir, options.model_id);
  g.openapi_document_ = OpenApiDocument(g.model_id_, kVersion);

  const int workers = options.tokenization_workers > 0
                          ? options.tokenization_workers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Loaded once (a 250k vocabulary's trie is 42 MB) and shared read-only; each pool thread
  // keeps its own scratch memory.
  auto tokenizer = engine::ModelTokenizer::Load(options.model_dir, g.config_);
  if (!tokenizer.ok()) return tokenizer.status();
  g.tokenizers_.push_back(std::move(tokenizer.value()));
  while (g.tokenizers_.size() < static_cast<size_t>(workers)) {
    g.tokenizers_.push_back(g.tokenizers_.front()->ShareWithNewScratch());
  }
  if (g.sentence_transformers_.multi_vector.enabled) {
    auto inputs = MultiVectorInputs::Resolve(g.sentence_transformers_.multi_vector, *g.tokenizers_.front());
    if (!inputs.ok()) return Status::Error(options.model_dir + ": " + inputs.status().message());
    g.multi_vector_ = std::move(inputs.value());
  }

  if (g.config_.bge_m3.enabled) {
    auto dropped = engine::BgeM3DroppedIds(options.model_dir, *g.tokenizers_.front());
    if (!dropped.ok()) return dropped.status();
    g.bge_m3_ = true;
    g.bge_m3_dropped_ids_ = std::move(dropped.value());
  }

  g.dispatcher_ = std::make_unique<Dispatcher>(options.dispatcher, registry);
  if (options.in_process_worker) {
    g.dispatcher_->AddWorker(options.in_process_worker);
  } else {
    const auto call_timeout = options.dispatcher.call_timeout;
    STAMEN_RETURN_IF_ERROR(g.dispatcher_->SetWorkerAddresses(options.worker_addresses, [call_timeout](const std::string& address) {
      return std::make_shared<GrpcBackend>(address, call_timeout);
    }));
  }
  double warm_up_rate = 0;
  for (const auto& worker : g.dispatcher_->workers()) {
    auto info = worker->backend->FetchInfo(std::chrono::milliseconds(2000));
    if (!info.ok()) {
      spdlog::warn("gateway: worker {} does not answer yet: {}", worker->backend->address(), info.status().message());
      continue;
    }
    if (!g.worker_info_) g.worker_info_ = *info;
    warm_up_rate += info->warm_up_tokens_per_second();
    // /info reports the gateway's version; say so when a worker runs another build.
    if (info->version() != kVersion) {
      spdlog::warn("gateway: worker {} runs stamen {}, the gateway {}", worker->backend->address(),
                   info->version().empty() ? "of unknown version" : info->version(), kVersion);
    }
    // The worker's engine works out the same profile from its folder; a worker that differs
    // would answer with other widths, limits or kinds than the gateway checks and reports.
    STAMEN_RETURN_IF_ERROR(CheckWorkerServes(*info, worker->backend->address(), g.config_.architecture, profile));
  }
  g.dispatcher_->SeedRate(warm_up_rate);
  g.dispatcher_->Start();
  g.pool_ = std::make_unique<TaskPool>(static_cast<size_t>(workers));

  g.request_seconds_ = &registry.AddHistogram("stamen_gateway_request_seconds", "HTTP request time, arrival to answer",
                                              metrics::ExponentialBuckets(0.0005, 2, 16));
  g.tokenization_seconds_ = &registry.AddHistogram("stamen_gateway_tokenization_seconds", "Tokenization time per request",
                                                   metrics::ExponentialBuckets(0.00005, 2, 16));
  g.tokens_total_ = &registry.AddCounter("stamen_gateway_tokens_total", "Tokens sent to workers");
  g.client_disconnects_ = &registry.AddCounter(
      "stamen_gateway_client_disconnects_total",
      "Requests whose client hung up before the answer; their work not yet computed was cancelled");

  g.routes_ = std::make_unique<RouteTable>(g.Routes());
  g.served_ = {gateway.get()};
  return gateway;
}

Gateway::~Gateway() { Shutdown(std::chrono::milliseconds(5000)); }

void Gateway::Shutdown(std::chrono::milliseconds drain) {
  if (shut_down_) return;
  shut_down_ = true;
  spdlog::info("gateway: shutting down: no new connections, finishing {} requests in flight", in_flight_.load());
  if (http_) http_->Stop(drain);
  pool_.reset();        // runs what is queued
  dispatcher_.reset();  // stops health checks
  spdlog::info("gateway: stopped");
}

void Gateway::CountResponse(const std::string& route, int status) {
  std::lock_guard lock(counters_mutex_);
  metrics::Counter*& counter = responses_[{route, status}];
  if (counter == nullptr) {
    counter = &registry_.AddCounter("stamen_gateway_responses_total", "HTTP answers by route and status",
                                    "route=\"" + route + "\",status=\"" + std::to_string(status) + "\"");
  }
  counter->Increment();
}

std::vector<Route> Gateway::Routes() {
  using enum ApiFamily;
  auto handler = [this](void (Gateway::*method)(const http::Request&, Reply)) {
    return [this, method](const http::Request& request, Reply reply) { (this->*method)(request, std::move(reply)); };
  };
  auto embed = [this](bool openai) {
    return [this, openai](const http::Request& request, Reply reply) { Embed(request, openai, std::move(reply)); };
  };
  auto rerank = [this](RerankShape shape) {
    return [this, shape](const http::Request& request, Reply reply) { Rerank(request, shape, std::move(reply)); };
  };
  auto health = [this](const http::Request&, Reply reply) { Health(std::move(reply)); };
  // Liveness: the process runs and its HTTP server answers, whatever the workers' state, so
  // that an orchestrator restarts only a stuck process, never one waiting for its workers.
  auto live = [](const http::Request&, Reply reply) { reply(JsonResponse(200, R"({"status":"ok"})")); };
  auto info = [this](const http::Request&, Reply reply) { reply(JsonResponse(200, InfoBody())); };
  auto metrics = [this](const http::Request&, Reply reply) {
    http::Response response = JsonResponse(200, registry_.Render());
    response.content_type = "text/plain; version=0.0.4";
    reply(std::move(response));
  };
  auto openapi = [this](const http::Request&, Reply reply) { reply(JsonResponse(200, openapi_document_)); };
  auto docs = [](const http::Request&, Reply reply) {
    http::Response response = JsonResponse(200, std::string(DocsPage()));
    response.content_type = "text/html; charset=utf-8";
    reply(std::move(response));
  };
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  return {
      {"/v1/embeddings", "POST", kOpenAI, true, false, embed(true)},
      {"/embeddings", "POST", kOpenAI, true, false, embed(true)},
      {"/v1/models", "GET", kOpenAI, false, false, handler(&Gateway::Models)},
      {"/v1/models/{id}", "GET", kOpenAI, false, false, handler(&Gateway::Model)},
      {"/v1/rerank", "POST", kCohere, true, false, rerank(RerankShape::kCohereV1)},
      {"/v2/rerank", "POST", kCohere, true, false, rerank(RerankShape::kCohereV2)},
      {"/v2/embed", "POST", kCohere, true, false, handler(&Gateway::CohereEmbed)},
      {"/embed", "POST", kTei, true, false, embed(false)},
      {"/rerank", "POST", kTei, true, false, rerank(RerankShape::kTei)},
      {"/predict", "POST", kTei, true, false, handler(&Gateway::Predict)},
      {"/similarity", "POST", kTei, true, false, handler(&Gateway::Similarity)},
      {"/tokenize", "POST", kTei, true, false, handler(&Gateway::Tokenize)},
      {"/decode", "POST", kTei, true, false, handler(&Gateway::Decode)},
      {"/embed_all", "POST", kTei, true, false, handler(&Gateway::EmbedAll)},
      {"/embed_sparse", "POST", kTei, true, false, handler(&Gateway::EmbedSparse)},
      {"/v1/multi-vector", "POST", kOpenAI, true, false, handler(&Gateway::MultiVector)},
      {"/embed_multi", "POST", kTei, true, false, handler(&Gateway::EmbedMulti)},
      // TEI's catch-all (what huggingface_hub's InferenceClient posts to) and SageMaker's.
      {"/", "POST", kTei, true, false, handler(&Gateway::TeiRoot)},
      {"/invocations", "POST", kTei, true, false, handler(&Gateway::TeiRoot)},
      {"/", "GET", kTei, false, true, health},
      {"/ping", "GET", kTei, false, true, health},  // SageMaker's health check
      {"/health", "GET", kTei, false, true, health},
      {"/ready", "GET", kTei, false, true, health},  // the readiness probe's name for /health
      {"/live", "GET", kTei, false, true, live},
      {"/info", "GET", kTei, false, false, info},
      {"/metrics", "GET", kTei, false, false, metrics},
      // The API's description (openapi.json; TEI serves it at /api-doc/openapi.json) and its
      // page: open, so that clients and people can find the API before they have a key.
      {"/openapi.json", "GET", kTei, false, true, openapi},
      {"/api-doc/openapi.json", "GET", kTei, false, true, openapi},
      {"/docs", "GET", kTei, false, true, docs},
  };
}

void Gateway::AddOriginHeaders(const std::string& allowed, http::Response& response) {
  if (allowed.empty()) return;
  response.headers.emplace_back("access-control-allow-origin", allowed);
  if (allowed != "*") response.headers.emplace_back("vary", "origin");
}

std::string Gateway::AllowedOrigin(std::string_view origin) const {
  if (origin.empty()) return "";
  for (const std::string& allowed : options_.cors_allow_origins) {
    if (allowed == "*") return "*";
    if (allowed == origin) return allowed;
  }
  return "";
}

void Gateway::Handle(http::Request request, http::Respond respond, std::optional<ApiError> refusal) {
  // CORS: answers to an allowed Origin say so; a browser's preflight (OPTIONS) is answered
  // here, before the API key (browsers send preflights without credentials).
  if (const std::string origin = AllowedOrigin(request.Header("origin")); !origin.empty()) {
    respond = [respond = std::move(respond), origin](http::Response response) {
      AddOriginHeaders(origin, response);
      respond(std::move(response));
    };
  }
  if (request.method == "OPTIONS") {
    const std::string methods = routes_->Methods(request.path);
    http::Response response;
    response.status = methods.empty() ? 404 : 204;
    response.headers.emplace_back("allow", methods.empty() ? "OPTIONS" : methods + ", OPTIONS");
    if (!AllowedOrigin(request.Header("origin")).empty() && !methods.empty()) {
      response.headers.emplace_back("access-control-allow-methods", methods);
      response.headers.emplace_back("access-control-allow-headers", "authorization, content-type");
      response.headers.emplace_back("access-control-max-age", "3600");
    }
    return respond(std::move(response));
  }
  const Clock::time_point start = Clock::now();
  const Route* route = routes_->Find(request.path, request.method);
  const Route* path_route = route ? route : routes_->FindPath(request.path);
  // An unknown path answers in OpenAI's shape, the one most clients parse.
  const ApiFamily family = path_route ? path_route->family : ApiFamily::kOpenAI;
  const std::string label = path_route ? path_route->path : "other";
  const bool is_work = route && route->work;
  if (is_work && in_flight_.fetch_add(1) >= options_.max_concurrent_requests) {
    --in_flight_;
    CountResponse(label, 429);
    http::Response refused = ErrorResponse({429, "overloaded: more than --max-concurrent-requests " +
                                                     std::to_string(options_.max_concurrent_requests) +
                                                     " requests in flight",
                                            "overloaded"},
                                           family);
    refused.headers.emplace_back("retry-after", std::to_string(dispatcher_->RetryAfterSeconds()));
    respond(std::move(refused));
    return;
  }
  Reply reply([this, respond, start, label, is_work](http::Response response) {
    const double total_ms = Milliseconds(Clock::now() - start);
    response.headers.emplace_back("x-total-time", std::to_string(std::llround(total_ms)));
    request_seconds_->Observe(total_ms / 1000);
    // Refused for load (admission or --max-concurrent-requests): when to try again.
    if (response.status == 429) {
      response.headers.emplace_back("retry-after", std::to_string(dispatcher_->RetryAfterSeconds()));
    }
    CountResponse(label, response.status);
    if (is_work) --in_flight_;
    respond(std::move(response));
  }, family);

  if (!options_.api_key.empty() && !(route && route->open)) {
    if (!ConstantTimeEquals(BearerToken(request.Header("authorization")), options_.api_key)) {
      http::Response response = ErrorResponse(
          {401, "missing or wrong API key (send Authorization: Bearer <key>)", "authentication_error"}, family);
      response.headers.emplace_back("www-authenticate", "Bearer");
      return reply(std::move(response));
    }
  }
  if (refusal) return reply.Error(*refusal);
  if (!path_route) return reply.Error({404, "no route " + request.method + " " + request.path, "not_found"});
  if (!route) {
    const std::string methods = routes_->Methods(request.path);
    http::Response response = ErrorResponse({405, request.path + " takes " + methods, "invalid_request_error"}, family);
    response.headers.emplace_back("allow", methods);
    return reply(std::move(response));
  }
  route->handler(request, std::move(reply));
}

void Gateway::Health(Reply reply) {
  if (dispatcher_->AnyHealthy()) return reply(JsonResponse(200, R"({"status":"ok"})"));
  reply.Error({503, "no healthy worker", "unavailable"});
}

void Gateway::Models(const http::Request&, Reply reply) {
  std::string body = "{\"object\":\"list\",\"data\":[";
  for (const Gateway* model : served_) {
    if (model != served_.front()) body += ',';
    AppendModelObject(body, model->model_id_, model->created_);
  }
  body += "]}";
  reply(JsonResponse(200, std::move(body)));
}

std::string ServedModelNames(const std::vector<const Gateway*>& models) {
  std::string names;
  for (const Gateway* model : models) names += (names.empty() ? "'" : ", '") + model->model_id() + "'";
  return names;
}

void Gateway::Model(const http::Request& request, Reply reply) {
  const std::string id = PathParameter("/v1/models/{id}", request.path);
  for (const Gateway* model : served_) {
    if (model->model_id_ != id) continue;
    std::string body;
    AppendModelObject(body, model->model_id_, model->created_);
    return reply(JsonResponse(200, std::move(body)));
  }
  reply.Error(UnknownModel(id, ServedModelNames(served_)));
}

std::variant<std::string, ApiError> Gateway::Prompt(const std::string& prompt_name) const {
  auto named = [&](const std::string& name) -> std::variant<std::string, ApiError> {
    if (const std::string* prompt = engine::FindPrompt(sentence_transformers_, name)) return *prompt;
    return ApiError{400, "unknown prompt_name '" + name + "' (the model's prompts: " +
                             engine::PromptNames(sentence_transformers_) + ")"};
  };
  if (!prompt_name.empty()) return named(prompt_name);
  if (!options_.default_prompt.empty()) return options_.default_prompt;
  if (!options_.default_prompt_name.empty()) return named(options_.default_prompt_name);
  // sentence-transformers applies the config's default prompt when the caller names none.
  if (!sentence_transformers_.default_prompt_name.empty()) return named(sentence_transformers_.default_prompt_name);
  return std::string();
}

std::variant<std::string, ApiError> Gateway::TaskPrompt(const TaskAdapter& task, const std::string& prompt_name) const {
  // A task brings its own instruction (as the model's remote code puts it before each text),
  // unless the caller names a prompt.
  if (task.index >= 0 && prompt_name.empty()) return task.prompt;
  return Prompt(prompt_name);
}

double Gateway::FinishTokenization(server::WorkRequest& job, Clock::time_point start) {
  const Clock::time_point now = Clock::now();
  job.deadline = now + options_.request_timeout;
  const double milliseconds = Milliseconds(now - start);
  tokenization_seconds_->Observe(milliseconds / 1000);
  tokens_total_->Increment(static_cast<uint64_t>(job.total_tokens()));
  return milliseconds;
}

std::optional<ApiError> Gateway::RefuseForLoad(int64_t least_tokens) const {
  const std::string refusal = dispatcher_->RefusalBeforeTokenizing(least_tokens, Clock::now() + options_.request_timeout);
  if (refusal.empty()) return std::nullopt;
  return ApiError{429, "overloaded: " + refusal, "overloaded"};
}

std::optional<ApiError> Gateway::RefuseForLoad(const std::vector<Input>& inputs) const {
  int64_t least_tokens = 0;
  for (const Input& input : inputs) least_tokens += LeastInputTokens(input, max_input_length_);
  return RefuseForLoad(least_tokens);
}

std::optional<ApiError> Gateway::CheckTokenStates(const std::string& route, int64_t tokens, int64_t columns) const {
  if (tokens * columns <= options_.max_token_states) return std::nullopt;
  return ApiError{413, route + " would answer " + std::to_string(tokens) + " token vectors of " +
                           std::to_string(columns) + " floats, more than " + std::to_string(options_.max_token_states) +
                           " floats in all: send fewer or shorter inputs"};
}

std::optional<ApiError> Gateway::CheckBatchSize(size_t count, const char* items) const {
  if (static_cast<int64_t>(count) <= options_.max_client_batch_size) return std::nullopt;
  return ApiError{413, "batch of " + std::to_string(count) + " " + items + " exceeds --max-client-batch-size " +
                           std::to_string(options_.max_client_batch_size)};
}

std::optional<ApiError> Gateway::CheckQuantizable(EmbeddingType type, bool normalized) const {
  if (normalized || (type != EmbeddingType::kInt8 && type != EmbeddingType::kUint8)) return std::nullopt;
  return ApiError{400, std::string("int8 and uint8 embeddings are calibrated to unit-length vectors ([-1, 1] per "
                                   "dimension): ask for \"") + std::string(EmbeddingTypeName(type)) +
                           "\" with \"normalize\": true"};
}

std::string Gateway::OtherModelsOfKind(bool embedders) const {
  std::vector<const Gateway*> others;
  for (const Gateway* model : served_) {
    if (model != this && model->reranker_ != embedders) others.push_back(model);
  }
  if (others.empty()) return "";
  return std::string("; this server's ") + (embedders ? "embedding models" : "rerankers and classifiers") + ": " +
         ServedModelNames(others) + " (name one in \"model\", or call /models/" + others.front()->model_id_ + "/…)";
}

std::optional<ApiError> Gateway::NeedEmbedder(const std::string& route, bool pooled) const {
  if (multi_vector_ && pooled) {
    return ApiError{400, "model " + model_id_ + " is a multi-vector (ColBERT) model: it gives one vector per token, "
                         "not one per input (" + route + "): use /v1/multi-vector, or /rerank, /v1/rerank and /v2/rerank "
                         "for MaxSim scores"};
  }
  if (!reranker_) return std::nullopt;
  return ApiError{400, "model " + model_id_ + " is a " + (kind_ == ModelKind::kReranker ? "reranker" : "classifier") +
                           ", not an embedding model (" + route + "): use " +
                           (kind_ == ModelKind::kReranker ? "/rerank, /v1/rerank or /predict" : "/predict") +
                           OtherModelsOfKind(true)};
}

std::optional<ApiError> Gateway::NeedClassifier(const std::string& what) const {
  if (reranker_) return std::nullopt;
  return ApiError{400, "model " + model_id_ + " is an embedding model, not a " + what +
                           ": use /embed or /v1/embeddings" + OtherModelsOfKind(false)};
}

std::optional<ApiError> Gateway::TokenizeInputs(engine::ModelTokenizer& tokenizer, const std::vector<Input>& inputs,
                                                const std::string& prompt, bool truncate, Truncation direction,
                                                WorkRequest& job, int64_t max_tokens) const {
  std::vector<int32_t> ids, all_ids;
  const int64_t most_tokens = max_tokens > 0 && (max_input_length_ <= 0 || max_tokens < max_input_length_)
                                  ? max_tokens : max_input_length_;
  const size_t limit = truncate ? static_cast<size_t>(most_tokens) : 0;
  const auto side = direction == Truncation::kLeft ? tokenizer::TruncationSide::kLeft : tokenizer::TruncationSide::kRight;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string what = "input " + std::to_string(i);
    if (const auto* text = std::get_if<std::string>(&inputs[i])) {
      if (text->empty()) return ApiError{400, what + " is an empty string"};
      tokenizer.Encode(prompt.empty() ? *text : prompt + *text, limit, &ids, side);
    } else {
      ids = std::get<std::vector<int32_t>>(inputs[i]);
      for (int32_t id : ids) {
        if (id < 0 || id >= config_.vocab_size) {
          return ApiError{400, what + ": token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                   std::to_string(config_.vocab_size - 1) + ")"};
        }
      }
      if (limit > 0 && ids.size() > limit) {
        if (side == tokenizer::TruncationSide::kLeft) ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(limit));
        ids.resize(limit);
      }
    }
    if (ids.empty()) return ApiError{400, what + " has no tokens"};
    if (most_tokens > 0 && static_cast<int64_t>(ids.size()) > most_tokens) {
      if (most_tokens < max_input_length_) {
        return ApiError{422, what + " has " + std::to_string(ids.size()) + " tokens, more than 'max_tokens' " +
                                 std::to_string(most_tokens)};
      }
      return ApiError{422, TooLongMessage(what, ids.size(), max_input_length_)};
    }
    all_ids.insert(all_ids.end(), ids.begin(), ids.end());
    job.lengths.push_back(static_cast<int32_t>(ids.size()));
  }
  job.token_ids.assign(reinterpret_cast<const char*>(all_ids.data()), all_ids.size() * sizeof(int32_t));
  return std::nullopt;
}

std::optional<ApiError> Gateway::TokenizeChunks(engine::ModelTokenizer& tokenizer, const EmbedCall& call,
                                                const std::string& prompt, WorkRequest& job,
                                                std::vector<std::vector<TextSpan>>* chunks,
                                                std::vector<std::vector<int64_t>>* rows) const {
  std::vector<int32_t> all_ids;
  int64_t first_row = 0;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const std::string what = "input " + std::to_string(i);
    const auto* text = std::get_if<std::string>(&call.inputs[i]);
    if (text == nullptr) return ApiError{400, what + ": 'chunks' need text inputs (token ids have no text offsets)"};
    if (text->empty()) return ApiError{400, what + " is an empty string"};
    const auto tokens = tokenizer.Tokenize(prompt + *text, /*add_special_tokens=*/true);
    chunks->push_back(call.chunking ? ChunksByRule(*call.chunking, *text, tokens, prompt.size()) : call.chunks[i]);
    if (chunks->back().empty()) return ApiError{422, what + ": 'chunking' finds no chunk in it"};
    if (static_cast<int64_t>(chunks->back().size()) > options_.max_client_batch_size) {
      return ApiError{413, what + ": 'chunking' cuts " + std::to_string(chunks->back().size()) +
                               " chunks, more than --max-client-batch-size " +
                               std::to_string(options_.max_client_batch_size)};
    }
    auto planned = PlanLateChunks(tokens, prompt.size(), text->size(), chunks->back(), max_input_length_, what);
    if (auto* error = std::get_if<ApiError>(&planned)) return *error;
    LateChunkPlan& plan = std::get<LateChunkPlan>(planned);
    all_ids.insert(all_ids.end(), plan.token_ids.begin(), plan.token_ids.end());
    job.lengths.insert(job.lengths.end(), plan.lengths.begin(), plan.lengths.end());
    job.span_counts.insert(job.span_counts.end(), plan.span_counts.begin(), plan.span_counts.end());
    job.spans.insert(job.spans.end(), plan.spans.begin(), plan.spans.end());
    for (int64_t& row : plan.row_of_chunk) row += first_row;
    first_row += static_cast<int64_t>(plan.row_of_chunk.size());
    rows->push_back(std::move(plan.row_of_chunk));
  }
  job.token_ids.assign(reinterpret_cast<const char*>(all_ids.data()), all_ids.size() * sizeof(int32_t));
  return std::nullopt;
}

std::optional<ApiError> Gateway::TokenizeScored(engine::ModelTokenizer& tokenizer, const std::vector<ScoredText>& texts,
                                                bool truncate, Truncation direction, const std::string& what,
                                                WorkRequest& job) const {
  std::vector<int32_t> ids, types, all_ids, all_types;
  const size_t limit = truncate ? static_cast<size_t>(max_input_length_) : 0;
  const auto side = direction == Truncation::kLeft ? tokenizer::TruncationSide::kLeft : tokenizer::TruncationSide::kRight;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].second && !config_.yes_no_token_ids.empty()) {
      tokenizer.EncodeYesNoPair(yes_no_template_, texts[i].first, *texts[i].second, limit, &ids);
      types.assign(ids.size(), 0);
    } else if (texts[i].second) {
      tokenizer.EncodePair(texts[i].first, *texts[i].second, limit, &ids, &types);
    } else {
      tokenizer.Encode(texts[i].first, limit, &ids, side);
      types.assign(ids.size(), 0);
    }
    if (max_input_length_ > 0 && static_cast<int64_t>(ids.size()) > max_input_length_) {
      return ApiError{422, TooLongMessage(what + " " + std::to_string(i), ids.size(), max_input_length_)};
    }
    all_ids.insert(all_ids.end(), ids.begin(), ids.end());
    all_types.insert(all_types.end(), types.begin(), types.end());
    job.lengths.push_back(static_cast<int32_t>(ids.size()));
  }
  job.kind = WorkKind::kScore;
  job.token_ids.assign(reinterpret_cast<const char*>(all_ids.data()), all_ids.size() * sizeof(int32_t));
  if (config_.type_vocab_size > 1) {
    job.token_type_ids.assign(reinterpret_cast<const char*>(all_types.data()), all_types.size() * sizeof(int32_t));
  }
  return std::nullopt;
}

void Gateway::Embed(const http::Request& request, bool openai, Reply respond) {
  auto parsed = ParseEmbedCall(request.body, openai);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond.Error(*error);
  auto call = std::make_shared<EmbedCall>(std::move(std::get<EmbedCall>(parsed)));
  if (auto error = NeedEmbedder(openai ? "/v1/embeddings" : "/embed")) return respond.Error(*error);
  if (auto error = CheckBatchSize(call->inputs.size(), "inputs")) return respond.Error(*error);
  size_t chunk_count = 0;
  for (const auto& chunks : call->chunks) chunk_count += chunks.size();
  if (auto error = CheckBatchSize(chunk_count, "chunks")) return respond.Error(*error);
  if (call->dimensions > dimensions_) {
    return respond.Error({400, "'dimensions' " + std::to_string(call->dimensions) + " exceeds the model's " +
                                   std::to_string(dimensions_)});
  }
  if (auto error = CheckQuantizable(call->encoding, openai || call->normalize)) return respond.Error(*error);
  if (auto error = RefuseForLoad(call->inputs)) return respond.Error(*error);
  auto task = ResolveTask(config_, call->task);
  if (auto* error = std::get_if<ApiError>(&task)) return respond.Error(*error);
  auto prompt = TaskPrompt(std::get<TaskAdapter>(task), call->prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return respond.Error(*error);
  const bool truncate = call->truncate.value_or(options_.auto_truncate);

  // Late chunking: input i's chunks, and (*chunk_rows)[i][k] the output row of its chunk k.
  auto chunks = std::make_shared<std::vector<std::vector<TextSpan>>>();
  auto chunk_rows = std::make_shared<std::vector<std::vector<int64_t>>>();
  auto tokenize = [this, call, prompt = std::get<std::string>(prompt), adapter = std::get<TaskAdapter>(task).index,
                   truncate, openai, chunks, chunk_rows](engine::ModelTokenizer& tokenizer, WorkRequest& job) {
    const bool late_chunking = !call->chunks.empty() || call->chunking;
    auto error = late_chunking ? TokenizeChunks(tokenizer, *call, prompt, job, chunks.get(), chunk_rows.get())
                               : TokenizeInputs(tokenizer, call->inputs, prompt, truncate, call->truncation_direction, job);
    job.kind = WorkKind::kEmbed;
    job.pooling = options_.pooling;
    job.normalize = openai ? true : call->normalize;
    job.dimensions = call->dimensions;
    job.adapter = adapter;
    job.priority = PriorityOf(call->priority, call->inputs.size(), options_.bulk_threshold);
    return error;
  };
  auto answer = [this, call, chunks, chunk_rows, openai](const WorkRequest& done) {
    const size_t count = done.lengths.size();
    const size_t columns = static_cast<size_t>(done.columns);
    const float* values = reinterpret_cast<const float*>(done.output.data());
    const auto ranges = QuantizationRanges::UnitVector(columns);
    std::string body;
    body.reserve(count * columns * (call->encoding == EmbeddingType::kFloat ? 12 : 6) + 256);
    body += openai ? "{\"object\":\"list\",\"data\":[" : "[";
    if (!chunk_rows->empty()) {
      AppendChunkVectors(body, *chunks, *chunk_rows, values, columns, call->encoding, ranges, openai,
                         /*with_spans=*/call->chunking.has_value());
    } else {
      for (size_t row = 0; row < count; ++row) {
        if (row) body += ',';
        if (openai) body += "{\"object\":\"embedding\",\"index\":" + std::to_string(row) + ",\"embedding\":";
        AppendEmbedding(body, values + row * columns, columns, call->encoding, ranges);
        if (openai) body += '}';
      }
    }
    body += ']';
    if (openai) {
      const std::string tokens = std::to_string(done.total_tokens());
      body += ",\"model\":";
      AppendJsonString(body, call->model.empty() ? model_id_ : call->model);
      body += ",\"usage\":{\"prompt_tokens\":" + tokens + ",\"total_tokens\":" + tokens + "}}";
    }
    return body;
  };
  Run(request, std::move(tokenize), std::move(answer), std::move(respond));
}

void Gateway::Rerank(const http::Request& request, RerankShape shape, Reply respond) {
  auto parsed = shape == RerankShape::kCohereV2 ? ParseCohereRerankCall(request.body)
                                                : ParseRerankCall(request.body, shape == RerankShape::kCohereV1);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond.Error(*error);
  auto call = std::make_shared<RerankCall>(std::move(std::get<RerankCall>(parsed)));
  if (multi_vector_) return RerankByMaxSim(request, call, shape, std::move(respond));
  if (auto error = NeedClassifier("reranker")) return respond.Error(*error);
  if (config_.num_labels != 1) {
    return respond.Error({400, "model " + model_id_ + " has " + std::to_string(config_.num_labels) +
                                   " labels; reranking needs a single relevance score: use /predict"});
  }
  if (auto error = CheckBatchSize(call->documents.size(), "documents")) return respond.Error(*error);
  // Each document runs beside the query (pair or template): the query's words count each time,
  // a document's at most max_tokens_per_doc.
  const int64_t query_tokens = LeastTokens(call->query, max_input_length_);
  const int64_t document_most = call->max_tokens_per_document.value_or(max_input_length_);
  int64_t least_tokens = 0;
  for (const std::string& document : call->documents) {
    least_tokens += std::min(query_tokens + LeastTokens(document, document_most), max_input_length_);
  }
  if (auto error = RefuseForLoad(least_tokens)) return respond.Error(*error);
  const bool truncate = call->truncate.value_or(options_.auto_truncate);
  auto tokenize = [this, call, truncate](engine::ModelTokenizer& tokenizer, WorkRequest& job) {
    // Cohere's max_tokens_per_doc: a document longer than that many tokens of its own is cut
    // at the end of its last one kept.
    std::vector<std::string_view> documents(call->documents.begin(), call->documents.end());
    if (const auto most = call->max_tokens_per_document) {
      for (std::string_view& document : documents) {
        const auto tokens = tokenizer.Tokenize(document, /*add_special_tokens=*/false);
        if (static_cast<int64_t>(tokens.size()) > *most) document = document.substr(0, tokens[*most - 1].end);
      }
    }
    std::vector<ScoredText> pairs;
    for (std::string_view document : documents) pairs.push_back({call->query, document});
    job.priority = PriorityOf(call->priority, call->documents.size(), options_.rerank_bulk_threshold);
    return TokenizeScored(tokenizer, pairs, truncate, Truncation::kRight, "the query with document", job);
  };
  auto answer = [this, call, shape](const WorkRequest& done) {
    const float* logits = reinterpret_cast<const float*>(done.output.data());
    std::vector<double> scores(done.lengths.size());
    for (size_t i = 0; i < scores.size(); ++i) {
      const double logit = logits[i * done.columns];
      scores[i] = call->raw_scores ? logit : 1.0 / (1.0 + std::exp(-logit));
    }
    return RerankBody(*call, shape, scores, static_cast<size_t>(done.total_tokens()));
  };
  Run(request, std::move(tokenize), std::move(answer), std::move(respond));
}

void Gateway::RerankByMaxSim(const http::Request& request, std::shared_ptr<RerankCall> call, RerankShape shape,
                             Reply respond) {
  if (auto error = CheckBatchSize(call->documents.size(), "documents")) return respond.Error(*error);
  auto tokenize = [this, call](engine::ModelTokenizer& tokenizer, WorkRequest& job) -> std::optional<ApiError> {
    // The query once (sequence 0), then each document: the worker scores each document against
    // the query's vectors it computed (WorkKind::kMaxSim); documents are cut to the model's
    // document_length as PyLate cuts them, so truncate does not apply.
    job.kind = WorkKind::kMaxSim;
    EncodeMultiVector(tokenizer, {call->query}, /*query=*/true, job);
    WorkRequest documents;
    EncodeMultiVector(tokenizer, call->documents, /*query=*/false, documents);
    job.token_ids += documents.token_ids;
    job.lengths.insert(job.lengths.end(), documents.lengths.begin(), documents.lengths.end());
    if (!job.key_lengths.empty()) job.key_lengths.resize(job.lengths.size(), 0);
    job.skip_token_ids = documents.skip_token_ids;
    job.priority = PriorityOf(call->priority, call->documents.size(), options_.rerank_bulk_threshold);
    return std::nullopt;
  };
  auto answer = [this, call, shape](const WorkRequest& done) {
    // PyLate's colbert_scores as they are, raw_scores or not: a sum of cosines, no sigmoid.
    const float* values = reinterpret_cast<const float*>(done.output.data());
    std::vector<double> scores(call->documents.size());
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = values[done.row_offsets[i + 1]];
    return RerankBody(*call, shape, scores, static_cast<size_t>(done.total_tokens()));
  };
  Run(request, std::move(tokenize), std::move(answer), std::move(respond));
}

std::string Gateway::RerankBody(const RerankCall& call, RerankShape shape, const std::vector<double>& scores,
                                size_t total_tokens) const {
  // Best first (ties in the documents' order), the top_n best when asked.
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (call.top_n && static_cast<size_t>(*call.top_n) < order.size()) order.resize(*call.top_n);
  const bool cohere = shape != RerankShape::kTei;
  std::string body;
  if (shape == RerankShape::kCohereV1) {
    body = "{\"model\":";
    AppendJsonString(body, call.model.empty() ? model_id_ : call.model);
    body += ",\"results\":[";
  } else if (shape == RerankShape::kCohereV2) {
    body = "{\"id\":\"" + NewRequestId() + "\",\"results\":[";
  } else {
    body = "[";
  }
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    body += k ? ",{" : "{";
    body += "\"index\":" + std::to_string(i) + (cohere ? ",\"relevance_score\":" : ",\"score\":");
    AppendFloat(body, static_cast<float>(scores[i]));
    if (call.return_documents) {
      body += cohere ? ",\"document\":{\"text\":" : ",\"text\":";
      AppendJsonString(body, call.documents[i]);
      if (cohere) body += '}';
    }
    body += '}';
  }
  body += ']';
  if (shape == RerankShape::kCohereV1) body += ",\"usage\":{\"total_tokens\":" + std::to_string(total_tokens) + "}}";
  if (shape == RerankShape::kCohereV2) {
    // Cohere bills a search unit per query with up to 100 documents.
    const size_t search_units = (call.documents.size() + 99) / 100;
    AppendCohereMeta(body, "\"search_units\":" + std::to_string(search_units), total_tokens);
    body += '}';
  }
  return body;
}

bool Gateway::ClientGone(const std::shared_ptr<http::ClientWatch>& client, const Reply& respond) {
  if (!client || !client->gone()) return false;
  client_disconnects_->Increment();
  // Nobody reads this answer; it completes the request's bookkeeping (499: nginx's "client
  // closed request").
  respond.Error({499, "the client closed the connection", "cancelled"});
  return true;
}

void Gateway::Dispatch(const std::shared_ptr<http::ClientWatch>& client, std::shared_ptr<WorkRequest> job,
                       std::function<void(WorkRequest&)> done) {
  // The answer is written on the pool: the dispatcher calls back on the scheduler's loop thread
  // (in process) or a gRPC thread, which must not block, and formatting thousands of floats or
  // sorting scores is real work.
  auto on_pool = [this, job, done = std::move(done)](WorkRequest&) { pool_->Post([job, done](size_t) { done(*job); }); };
  std::shared_ptr<Dispatcher::JobState> handle = dispatcher_->Run(std::move(job), std::move(on_pool));
  if (!client) return;
  // A weak handle: the watch lives as long as the connection, the job's state must not.
  client->OnGone([this, weak = std::weak_ptr<Dispatcher::JobState>(handle)] {
    client_disconnects_->Increment();
    if (auto job = weak.lock()) dispatcher_->Cancel(job);
  });
}

void Gateway::Run(const http::Request& request, TokenizeJob tokenize, AnswerJob answer, Reply reply) {
  pool_->Post([this, tokenize = std::move(tokenize), answer = std::move(answer), reply,
               client = request.client](size_t thread) {
    if (ClientGone(client, reply)) return;
    const Clock::time_point tokenization_start = Clock::now();
    auto job = std::make_shared<WorkRequest>();
    if (auto error = tokenize(*tokenizers_[thread], *job)) return reply.Error(*error);
    const double tokenization_ms = FinishTokenization(*job, tokenization_start);
    Dispatch(client, job, [answer, reply, tokenization_ms](WorkRequest& done) {
      if (!done.status.ok()) return reply.Error(DispatchError(done.status));
      auto body = answer(done);
      if (auto* error = std::get_if<ApiError>(&body)) return reply.Error(*error);
      reply(TimedResponse(std::move(std::get<std::string>(body)), tokenization_ms, done.timing));
    });
  });
}

void Gateway::Tokenize(const http::Request& request, Reply respond) {
  auto parsed = ParseTokenizeCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond.Error(*error);
  auto call = std::make_shared<TokenizeCall>(std::move(std::get<TokenizeCall>(parsed)));
  if (auto error = CheckBatchSize(call->inputs.size(), "inputs")) return respond.Error(*error);
  auto prompt = Prompt(call->prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return respond.Error(*error);
  pool_->Post([this, call, prompt = std::get<std::string>(prompt), respond](size_t thread) {
    engine::ModelTokenizer& tokenizer = *tokenizers_[thread];
    // Each token is ~60 bytes of JSON and ~50 bytes while listed with its text, so the answer
    // is bounded by --max-tokenize-tokens before an input's tokens are listed. A text gives at
    // most one token per byte and a few special tokens: only an input that could pass the
    // bound is counted first, as bare ids (4 bytes each). Encode always adds the template's
    // special tokens (those of an empty text); an answer without them lists that many fewer.
    constexpr int64_t kSpecialTokensAtMost = 8;
    const int64_t most = options_.max_tokenize_tokens;
    int64_t total = 0;
    std::optional<int64_t> template_tokens;
    std::vector<int32_t> ids;
    std::string body = "[";
    const auto too_many = [&](int64_t answered, size_t i) {
      return ApiError{413, "/tokenize would answer at least " + std::to_string(answered) + " tokens (with input " +
                               std::to_string(i) + "), more than --max-tokenize-tokens " + std::to_string(most) +
                               ": send fewer or shorter inputs"};
    };
    for (size_t i = 0; i < call->inputs.size(); ++i) {
      const std::string text = prompt + call->inputs[i];
      // Its words first (a lower bound of its tokens, least_tokens.h): a flood of words is
      // refused without tokenizing it, whose buffers the allocator would keep (+200 MB for a
      // 5 MB body of 2.5 M words in the soak).
      if (const int64_t words = LeastTokens(text, 0); total + words > most) return respond.Error(too_many(total + words, i));
      if (total + static_cast<int64_t>(text.size()) + kSpecialTokensAtMost > most) {
        if (!template_tokens) {
          ids.clear();
          if (!call->add_special_tokens) tokenizer.Encode("", 0, &ids);
          template_tokens = static_cast<int64_t>(ids.size());
        }
        ids.clear();
        tokenizer.Encode(text, 0, &ids);
        const int64_t answered = total + static_cast<int64_t>(ids.size()) - *template_tokens;
        if (answered > most) return respond.Error(too_many(answered, i));
      }
      const auto tokens = tokenizer.Tokenize(text, call->add_special_tokens);
      total += static_cast<int64_t>(tokens.size());
      body += i ? ",[" : "[";
      for (size_t k = 0; k < tokens.size(); ++k) {
        const auto& token = tokens[k];
        body += k ? ",{\"id\":" : "{\"id\":";
        body += std::to_string(token.id) + ",\"text\":";
        AppendJsonString(body, token.piece);
        body += std::string(",\"special\":") + (token.special ? "true" : "false");
        if (token.special) {
          body += ",\"start\":null,\"stop\":null}";
        } else {
          body += ",\"start\":" + std::to_string(token.begin) + ",\"stop\":" + std::to_string(token.end) + "}";
        }
      }
      body += ']';
    }
    body += ']';
    respond(JsonResponse(200, std::move(body)));
  });
}

server::Priority Gateway::PriorityOf(std::optional<server::Priority> named, size_t inputs, int64_t bulk_threshold) {
  if (named) return *named;
  const bool bulk = bulk_threshold > 0 && static_cast<int64_t>(inputs) > bulk_threshold;
  return bulk ? server::Priority::kLow : server::Priority::kNormal;
}

std::optional<v1::InfoResponse> Gateway::WorkerInfo() const {
  std::lock_guard lock(worker_info_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (worker_info_ || now - worker_info_asked_ < std::chrono::seconds(1)) return worker_info_;
  worker_info_asked_ = now;
  for (const auto& worker : dispatcher_->workers()) {
    auto info = worker->backend->FetchInfo(std::chrono::milliseconds(250));
    if (!info.ok()) continue;
    // A worker that came up later must serve the same model, as at start.
    const Status serves = CheckWorkerServes(*info, worker->backend->address(), config_.architecture, profile_);
    if (!serves.ok()) {
      spdlog::error("gateway: {}", serves.message());
      continue;
    }
    worker_info_ = *info;
    break;
  }
  return worker_info_;
}

std::string Gateway::InfoBody() const {
  const std::optional<v1::InfoResponse> worker_info = WorkerInfo();
  std::string body = "{\"model_id\":";
  AppendJsonString(body, model_id_);
  body += ",\"architecture\":";
  AppendJsonString(body, config_.architecture);
  body += ",\"model_dtype\":";
  AppendJsonString(body, worker_info ? worker_info->dtype() : "unknown");
  body += ",\"served_model_name\":";
  AppendJsonString(body, model_id_);
  // TEI's ModelType: a one-label head is a reranker, a head of several labels a classifier;
  // an embedding model names the pooling in force.
  body += ",\"model_type\":";
  if (reranker_) {
    body += kind_ == ModelKind::kReranker ? "{\"reranker\":{\"id2label\":{" : "{\"classifier\":{\"id2label\":{";
    for (size_t i = 0; i < config_.id2label.size(); ++i) {
      body += (i ? ",\"" : "\"") + std::to_string(i) + "\":";
      AppendJsonString(body, config_.id2label[i]);
    }
    body += "},\"label2id\":{";
    for (size_t i = 0; i < config_.id2label.size(); ++i) {
      body += i ? "," : "";
      AppendJsonString(body, config_.id2label[i]);
      body += ':' + std::to_string(i);
    }
    body += "}}}";
  } else {
    body += "{\"embedding\":{\"pooling\":";
    AppendJsonString(body, engine::PoolingOptionName(pooling_));
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
  body += ",\"dimensions\":" + std::to_string(dimensions_);
  body += ",\"max_input_length\":" + std::to_string(max_input_length_);
  body += ",\"max_concurrent_requests\":" + std::to_string(options_.max_concurrent_requests);
  body += ",\"max_client_batch_size\":" + std::to_string(options_.max_client_batch_size);
  body += ",\"max_batch_tokens\":" + std::to_string(worker_info ? worker_info->max_batch_tokens() : 0);
  body += ",\"payload_limit\":" + std::to_string(options_.payload_limit);
  body += std::string(",\"auto_truncate\":") + (options_.auto_truncate ? "true" : "false");
  body += ",\"tokenization_workers\":" + std::to_string(tokenizers_.size());
  body += ",\"workers\":" + std::to_string(dispatcher_->workers().size());
  body += ",\"prompts\":{";
  bool first = true;
  for (const auto& [name, text] : sentence_transformers_.prompts) {
    body += first ? "" : ",";
    first = false;
    AppendJsonString(body, name);
    body += ':';
    AppendJsonString(body, text);
  }
  body += '}';
  // The task adapters a request may name in "task" (jina-embeddings-v3), with their prompts.
  if (!config_.adapter_tasks.empty()) {
    body += ",\"tasks\":{";
    for (size_t task = 0; task < config_.adapter_tasks.size(); ++task) {
      if (task) body += ',';
      AppendJsonString(body, config_.adapter_tasks[task]);
      body += ':';
      AppendJsonString(body, config_.adapter_prompts[task]);
    }
    body += '}';
  }
  body += ",\"version\":\"";
  body += kVersion;
  body += "\"}";
  return body;
}

}  // namespace stamen::gateway
