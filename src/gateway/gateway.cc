#include "gateway/gateway.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <thread>

namespace stamen::gateway {

namespace {

using Clock = std::chrono::steady_clock;
using server::WorkKind;
using server::WorkRequest;

constexpr const char* kVersion = STAMEN_VERSION;  // CMake's project version

http::Response JsonResponse(int status, std::string body) {
  http::Response response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

http::Response ErrorResponse(const ApiError& error) { return JsonResponse(error.status, ErrorBody(error)); }

// How a failed dispatch is answered.
ApiError DispatchError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return {422, status.message(), "invalid_request_error"};
    case StatusCode::kResourceExhausted: return {429, "overloaded: " + status.message(), "overloaded"};
    case StatusCode::kUnavailable: return {503, status.message(), "unavailable"};
    case StatusCode::kDeadlineExceeded: return {504, "the request timed out: " + status.message(), "timeout"};
    // Only a client that hung up cancels work (the gateway then cancels its dispatch): nobody
    // reads this answer; 499 (nginx's "client closed request") keeps the metrics honest.
    case StatusCode::kCancelled: return {499, "the client closed the connection: " + status.message(), "cancelled"};
    default: return {500, "inference failed: " + status.message(), "server_error"};
  }
}

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

double Milliseconds(Clock::duration duration) { return std::chrono::duration<double, std::milli>(duration).count(); }

void AddTimingHeaders(http::Response& response, double tokenization_ms, const server::WorkTiming& timing) {
  // Whole milliseconds, as Text Embeddings Inference writes them.
  response.headers.emplace_back("x-tokenization-time", std::to_string(std::llround(tokenization_ms)));
  response.headers.emplace_back("x-queue-time", std::to_string(timing.queue_microseconds / 1000));
  response.headers.emplace_back("x-inference-time", std::to_string(timing.compute_microseconds / 1000));
}

std::string TooLongMessage(const std::string& what, size_t tokens, int64_t limit) {
  return what + " has " + std::to_string(tokens) + " tokens; the model takes at most " + std::to_string(limit) +
         ". Shorten it, send \"truncate\": true, or start the server with --auto-truncate";
}

}  // namespace

StatusOr<std::unique_ptr<Gateway>> Gateway::Start(const GatewayOptions& options, metrics::Registry& registry) {
  auto gateway = std::unique_ptr<Gateway>(new Gateway(registry));
  Gateway& g = *gateway;
  g.options_ = options;
  namespace fs = std::filesystem;
  auto config = engine::ReadModelConfig((fs::path(options.model_dir) / "config.json").string());
  if (!config.ok()) return config.status();
  g.config_ = config.value();
  auto sentence_transformers = engine::ReadSentenceTransformersConfig(options.model_dir);
  if (!sentence_transformers.ok()) return sentence_transformers.status();
  g.sentence_transformers_ = sentence_transformers.value();
  g.max_input_length_ = engine::MaxSequenceLength(g.config_, g.sentence_transformers_);
  g.dimensions_ = g.config_.hidden_size;
  g.reranker_ = g.config_.head == engine::ModelHead::kSequenceClassification;
  g.model_id_ = !options.model_id.empty() ? options.model_id
                                          : fs::path(options.model_dir).lexically_normal().filename().string();
  if (g.model_id_.empty()) g.model_id_ = fs::path(options.model_dir).lexically_normal().parent_path().filename().string();
  if (!options.default_prompt_name.empty() && !g.sentence_transformers_.prompts.count(options.default_prompt_name)) {
    return Status::Error("--default-prompt-name '" + options.default_prompt_name +
                         "' is not a prompt of the model's config_sentence_transformers.json");
  }

  const int workers = options.tokenization_workers > 0
                          ? options.tokenization_workers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < workers; ++i) {
    auto tokenizer = engine::ModelTokenizer::Load(options.model_dir, g.config_);
    if (!tokenizer.ok()) return tokenizer.status();
    g.tokenizers_.push_back(std::move(tokenizer.value()));
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
  for (const auto& worker : g.dispatcher_->workers()) {
    auto info = worker->backend->FetchInfo(std::chrono::milliseconds(2000));
    if (!info.ok()) {
      spdlog::warn("gateway: worker {} does not answer yet: {}", worker->backend->address(), info.status().message());
      continue;
    }
    if (!g.worker_info_) g.worker_info_ = *info;
    if (static_cast<int64_t>(info->dimensions()) != g.dimensions_ || info->architecture() != g.config_.architecture) {
      spdlog::warn("gateway: worker {} serves {} ({}, {} dimensions), not the gateway's model {} ({}, {} dimensions)",
                   worker->backend->address(), info->model_id(), info->architecture(), info->dimensions(),
                   g.model_id_, g.config_.architecture, g.dimensions_);
    }
  }
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

  http::ServerOptions http_options;
  http_options.host = options.host;
  http_options.port = options.port;
  http_options.threads = options.http_threads;
  http_options.body_limit = options.payload_limit;
  Gateway* self = gateway.get();
  auto server = http::Server::Start(http_options, [self](http::Request request, http::Respond respond) {
    self->Handle(std::move(request), std::move(respond));
  });
  if (!server.ok()) return server.status();
  g.http_ = std::move(server.value());
  spdlog::info("gateway: {} ({}, {}) on http://{}:{} with {} tokenization threads, {} worker(s)", g.model_id_,
               g.config_.architecture, g.reranker_ ? "reranker" : std::to_string(g.dimensions_) + " dimensions",
               options.host, g.http_->port(), workers, g.dispatcher_->workers().size());
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

void Gateway::Handle(http::Request request, http::Respond respond) {
  const Clock::time_point start = Clock::now();
  static const std::vector<std::string> kRoutes = {"/v1/embeddings", "/embeddings", "/embed",   "/rerank",
                                                   "/v1/rerank",     "/tokenize",   "/health", "/info",
                                                   "/metrics"};
  const bool known = std::find(kRoutes.begin(), kRoutes.end(), request.path) != kRoutes.end();
  const std::string route = known ? request.path : "other";
  const bool is_work = request.method == "POST" && known && request.path != "/health" && request.path != "/info" &&
                       request.path != "/metrics";
  if (is_work && in_flight_.fetch_add(1) >= options_.max_concurrent_requests) {
    --in_flight_;
    CountResponse(route, 429);
    respond(ErrorResponse({429, "overloaded: more than --max-concurrent-requests " +
                                    std::to_string(options_.max_concurrent_requests) + " requests in flight",
                           "overloaded"}));
    return;
  }
  http::Respond finish = [this, respond, start, route, is_work](http::Response response) {
    const double total_ms = Milliseconds(Clock::now() - start);
    response.headers.emplace_back("x-total-time", std::to_string(std::llround(total_ms)));
    request_seconds_->Observe(total_ms / 1000);
    CountResponse(route, response.status);
    if (is_work) --in_flight_;
    respond(std::move(response));
  };

  if (!options_.api_key.empty() && request.path != "/health") {
    const std::string expected = "Bearer " + options_.api_key;
    if (!ConstantTimeEquals(request.Header("authorization"), expected)) {
      http::Response response = ErrorResponse({401, "missing or wrong API key (send Authorization: Bearer <key>)", "authentication_error"});
      response.headers.emplace_back("www-authenticate", "Bearer");
      return finish(std::move(response));
    }
  }
  if (!known) return finish(ErrorResponse({404, "no route " + request.method + " " + request.path, "not_found"}));
  const bool get_route = request.path == "/health" || request.path == "/info" || request.path == "/metrics";
  if ((get_route && request.method != "GET" && request.method != "HEAD") || (!get_route && request.method != "POST")) {
    http::Response response = ErrorResponse({405, request.path + " takes " + (get_route ? "GET" : "POST"), "invalid_request_error"});
    response.headers.emplace_back("allow", get_route ? "GET" : "POST");
    return finish(std::move(response));
  }
  if (request.path == "/health") {
    if (dispatcher_->AnyHealthy()) return finish(JsonResponse(200, R"({"status":"ok"})"));
    return finish(ErrorResponse({503, "no healthy worker", "unavailable"}));
  }
  if (request.path == "/info") return finish(JsonResponse(200, InfoBody()));
  if (request.path == "/metrics") {
    http::Response response = JsonResponse(200, registry_.Render());
    response.content_type = "text/plain; version=0.0.4";
    return finish(std::move(response));
  }
  if (request.path == "/v1/embeddings" || request.path == "/embeddings") return Embed(request, true, finish);
  if (request.path == "/embed") return Embed(request, false, finish);
  if (request.path == "/rerank") return Rerank(request, false, finish);
  if (request.path == "/v1/rerank") return Rerank(request, true, finish);
  return Tokenize(request, finish);
}

std::variant<std::string, ApiError> Gateway::Prompt(const std::string& prompt_name) const {
  const auto& prompts = sentence_transformers_.prompts;
  auto named = [&](const std::string& name) -> std::variant<std::string, ApiError> {
    const auto found = prompts.find(name);
    if (found != prompts.end()) return found->second;
    std::string known;
    for (const auto& [key, value] : prompts) known += (known.empty() ? "" : ", ") + key;
    return ApiError{400, "unknown prompt_name '" + name + "' (the model's prompts: " + (known.empty() ? "none" : known) + ")"};
  };
  if (!prompt_name.empty()) return named(prompt_name);
  if (!options_.default_prompt.empty()) return options_.default_prompt;
  if (!options_.default_prompt_name.empty()) return named(options_.default_prompt_name);
  // sentence-transformers applies the config's default prompt when the caller names none.
  if (!sentence_transformers_.default_prompt_name.empty()) return named(sentence_transformers_.default_prompt_name);
  return std::string();
}

double Gateway::FinishTokenization(server::WorkRequest& job, size_t tokens, Clock::time_point start) {
  const Clock::time_point now = Clock::now();
  job.deadline = now + options_.request_timeout;
  const double milliseconds = Milliseconds(now - start);
  tokenization_seconds_->Observe(milliseconds / 1000);
  tokens_total_->Increment(tokens);
  return milliseconds;
}

std::optional<ApiError> Gateway::CheckBatchSize(size_t count, const char* items) const {
  if (static_cast<int64_t>(count) <= options_.max_client_batch_size) return std::nullopt;
  return ApiError{413, "batch of " + std::to_string(count) + " " + items + " exceeds --max-client-batch-size " +
                           std::to_string(options_.max_client_batch_size)};
}

void Gateway::Embed(const http::Request& request, bool openai, http::Respond respond) {
  auto parsed = ParseEmbedCall(request.body, openai);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond(ErrorResponse(*error));
  auto call = std::make_shared<EmbedCall>(std::move(std::get<EmbedCall>(parsed)));
  if (reranker_) {
    return respond(ErrorResponse({400, "model " + model_id_ + " is a reranker: use /rerank or /v1/rerank"}));
  }
  if (auto error = CheckBatchSize(call->inputs.size(), "inputs")) return respond(ErrorResponse(*error));
  if (call->dimensions > dimensions_) {
    return respond(ErrorResponse({400, "'dimensions' " + std::to_string(call->dimensions) +
                                           " exceeds the model's " + std::to_string(dimensions_)}));
  }
  auto prompt = Prompt(call->prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return respond(ErrorResponse(*error));
  const bool truncate = call->truncate.value_or(options_.auto_truncate);

  pool_->Post([this, call, prompt = std::get<std::string>(prompt), truncate, openai, respond,
               client = request.client](size_t thread) {
    if (ClientGone(client, respond)) return;
    const Clock::time_point tokenization_start = Clock::now();
    engine::ModelTokenizer& tokenizer = *tokenizers_[thread];
    auto job = std::make_shared<WorkRequest>();
    std::vector<int32_t> ids, all_ids;
    const size_t limit = truncate ? static_cast<size_t>(max_input_length_) : 0;
    const auto side = call->truncation_direction == Truncation::kLeft ? tokenizer::TruncationSide::kLeft
                                                                      : tokenizer::TruncationSide::kRight;
    for (size_t i = 0; i < call->inputs.size(); ++i) {
      const std::string what = "input " + std::to_string(i);
      if (const auto* text = std::get_if<std::string>(&call->inputs[i])) {
        if (text->empty()) return respond(ErrorResponse({400, what + " is an empty string"}));
        tokenizer.Encode(prompt.empty() ? *text : prompt + *text, limit, &ids, side);
      } else {
        ids = std::get<std::vector<int32_t>>(call->inputs[i]);
        for (int32_t id : ids) {
          if (id < 0 || id >= config_.vocab_size) {
            return respond(ErrorResponse({400, what + ": token id " + std::to_string(id) +
                                                   " is outside the vocabulary (0.." +
                                                   std::to_string(config_.vocab_size - 1) + ")"}));
          }
        }
        if (limit > 0 && ids.size() > limit) {
          if (side == tokenizer::TruncationSide::kLeft) ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(limit));
          ids.resize(limit);
        }
      }
      if (ids.empty()) return respond(ErrorResponse({400, what + " has no tokens"}));
      if (max_input_length_ > 0 && static_cast<int64_t>(ids.size()) > max_input_length_) {
        return respond(ErrorResponse({422, TooLongMessage(what, ids.size(), max_input_length_)}));
      }
      all_ids.insert(all_ids.end(), ids.begin(), ids.end());
      job->lengths.push_back(static_cast<int32_t>(ids.size()));
    }
    job->kind = WorkKind::kEmbed;
    job->pooling = options_.pooling;
    job->normalize = openai ? true : call->normalize;
    job->dimensions = call->dimensions;
    job->priority = PriorityOf(call->priority, call->inputs.size(), options_.bulk_threshold);
    job->token_ids.assign(reinterpret_cast<const char*>(all_ids.data()), all_ids.size() * sizeof(int32_t));
    const double tokenization_ms = FinishTokenization(*job, all_ids.size(), tokenization_start);
    const size_t total_tokens = all_ids.size();

    Dispatch(client, job, [this, job, call, openai, respond, tokenization_ms, total_tokens](WorkRequest& done) {
      if (!done.status.ok()) return respond(ErrorResponse(DispatchError(done.status)));
      // Formatting thousands of floats is real work: off the worker's thread, onto the pool.
      pool_->Post([this, job, call, openai, respond, tokenization_ms, total_tokens](size_t) {
        const WorkRequest& done = *job;
        const size_t count = done.lengths.size();
        const size_t columns = static_cast<size_t>(done.columns);
        const float* values = reinterpret_cast<const float*>(done.output.data());
        std::string body;
        body.reserve(count * columns * (call->base64 ? 6 : 12) + 256);
        if (openai) {
          body += "{\"object\":\"list\",\"data\":[";
          for (size_t row = 0; row < count; ++row) {
            body += row ? ",{" : "{";
            body += "\"object\":\"embedding\",\"index\":" + std::to_string(row) + ",\"embedding\":";
            if (call->base64) {
              body += '"';
              body += Base64(std::string_view(done.output).substr(row * columns * sizeof(float), columns * sizeof(float)));
              body += '"';
            } else {
              body += '[';
              for (size_t column = 0; column < columns; ++column) {
                if (column) body += ',';
                AppendFloat(body, values[row * columns + column]);
              }
              body += ']';
            }
            body += '}';
          }
          body += "],\"model\":";
          AppendJsonString(body, call->model.empty() ? model_id_ : call->model);
          body += ",\"usage\":{\"prompt_tokens\":" + std::to_string(total_tokens) +
                  ",\"total_tokens\":" + std::to_string(total_tokens) + "}}";
        } else {
          body += '[';
          for (size_t row = 0; row < count; ++row) {
            body += row ? ",[" : "[";
            for (size_t column = 0; column < columns; ++column) {
              if (column) body += ',';
              AppendFloat(body, values[row * columns + column]);
            }
            body += ']';
          }
          body += ']';
        }
        http::Response response = JsonResponse(200, std::move(body));
        AddTimingHeaders(response, tokenization_ms, done.timing);
        respond(std::move(response));
      });
    });
  });
}

void Gateway::Rerank(const http::Request& request, bool cohere, http::Respond respond) {
  auto parsed = ParseRerankCall(request.body, cohere);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond(ErrorResponse(*error));
  auto call = std::make_shared<RerankCall>(std::move(std::get<RerankCall>(parsed)));
  if (!reranker_) {
    return respond(ErrorResponse({400, "model " + model_id_ + " is an embedding model, not a reranker: use /embed or /v1/embeddings"}));
  }
  if (config_.num_labels != 1) {
    return respond(ErrorResponse({400, "model " + model_id_ + " has " + std::to_string(config_.num_labels) +
                                           " labels; reranking needs a single relevance score"}));
  }
  if (auto error = CheckBatchSize(call->documents.size(), "documents")) return respond(ErrorResponse(*error));
  const bool truncate = call->truncate.value_or(options_.auto_truncate);
  pool_->Post([this, call, cohere, truncate, respond, client = request.client](size_t thread) {
    if (ClientGone(client, respond)) return;
    const Clock::time_point tokenization_start = Clock::now();
    engine::ModelTokenizer& tokenizer = *tokenizers_[thread];
    auto job = std::make_shared<WorkRequest>();
    std::vector<int32_t> ids, types, all_ids, all_types;
    const size_t limit = truncate ? static_cast<size_t>(max_input_length_) : 0;
    for (size_t i = 0; i < call->documents.size(); ++i) {
      tokenizer.EncodePair(call->query, call->documents[i], limit, &ids, &types);
      if (max_input_length_ > 0 && static_cast<int64_t>(ids.size()) > max_input_length_) {
        return respond(ErrorResponse({422, TooLongMessage("the query with document " + std::to_string(i), ids.size(),
                                                          max_input_length_)}));
      }
      all_ids.insert(all_ids.end(), ids.begin(), ids.end());
      all_types.insert(all_types.end(), types.begin(), types.end());
      job->lengths.push_back(static_cast<int32_t>(ids.size()));
    }
    job->kind = WorkKind::kScore;
    job->priority = PriorityOf(call->priority, call->documents.size(), options_.rerank_bulk_threshold);
    job->token_ids.assign(reinterpret_cast<const char*>(all_ids.data()), all_ids.size() * sizeof(int32_t));
    if (config_.type_vocab_size > 1) {
      job->token_type_ids.assign(reinterpret_cast<const char*>(all_types.data()), all_types.size() * sizeof(int32_t));
    }
    const double tokenization_ms = FinishTokenization(*job, all_ids.size(), tokenization_start);
    const size_t total_tokens = all_ids.size();
    Dispatch(client, job, [this, call, cohere, respond, tokenization_ms, total_tokens](WorkRequest& done) {
      if (!done.status.ok()) return respond(ErrorResponse(DispatchError(done.status)));
      const float* logits = reinterpret_cast<const float*>(done.output.data());
      std::vector<double> scores(done.lengths.size());
      for (size_t i = 0; i < scores.size(); ++i) {
        const double logit = logits[i * done.columns];
        scores[i] = call->raw_scores ? logit : 1.0 / (1.0 + std::exp(-logit));
      }
      std::vector<size_t> order(scores.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
      if (call->top_n && static_cast<size_t>(*call->top_n) < order.size()) order.resize(*call->top_n);
      std::string body = cohere ? "{\"model\":" : "[";
      if (cohere) {
        AppendJsonString(body, call->model.empty() ? model_id_ : call->model);
        body += ",\"results\":[";
      }
      for (size_t k = 0; k < order.size(); ++k) {
        const size_t i = order[k];
        body += k ? ",{" : "{";
        body += "\"index\":" + std::to_string(i) + (cohere ? ",\"relevance_score\":" : ",\"score\":");
        AppendFloat(body, static_cast<float>(scores[i]));
        if (call->return_documents) {
          body += cohere ? ",\"document\":{\"text\":" : ",\"text\":";
          AppendJsonString(body, call->documents[i]);
          if (cohere) body += '}';
        }
        body += '}';
      }
      body += ']';
      if (cohere) body += ",\"usage\":{\"total_tokens\":" + std::to_string(total_tokens) + "}}";
      http::Response response = JsonResponse(200, std::move(body));
      AddTimingHeaders(response, tokenization_ms, done.timing);
      respond(std::move(response));
    });
  });
}

bool Gateway::ClientGone(const std::shared_ptr<http::ClientWatch>& client, const http::Respond& respond) {
  if (!client || !client->gone()) return false;
  client_disconnects_->Increment();
  // Nobody reads this answer; it completes the request's bookkeeping (499: nginx's "client
  // closed request").
  respond(ErrorResponse({499, "the client closed the connection", "cancelled"}));
  return true;
}

void Gateway::Dispatch(const std::shared_ptr<http::ClientWatch>& client, std::shared_ptr<WorkRequest> job,
                       std::function<void(WorkRequest&)> done) {
  std::shared_ptr<Dispatcher::JobState> handle = dispatcher_->Run(std::move(job), std::move(done));
  if (!client) return;
  // A weak handle: the watch lives as long as the connection, the job's state must not.
  client->OnGone([this, weak = std::weak_ptr<Dispatcher::JobState>(handle)] {
    client_disconnects_->Increment();
    if (auto job = weak.lock()) dispatcher_->Cancel(job);
  });
}

void Gateway::Tokenize(const http::Request& request, http::Respond respond) {
  auto parsed = ParseTokenizeCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond(ErrorResponse(*error));
  auto call = std::make_shared<TokenizeCall>(std::move(std::get<TokenizeCall>(parsed)));
  if (auto error = CheckBatchSize(call->inputs.size(), "inputs")) return respond(ErrorResponse(*error));
  auto prompt = Prompt(call->prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return respond(ErrorResponse(*error));
  pool_->Post([this, call, prompt = std::get<std::string>(prompt), respond](size_t thread) {
    engine::ModelTokenizer& tokenizer = *tokenizers_[thread];
    std::string body = "[";
    for (size_t i = 0; i < call->inputs.size(); ++i) {
      body += i ? ",[" : "[";
      const auto tokens = tokenizer.Tokenize(prompt + call->inputs[i], call->add_special_tokens);
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

std::string Gateway::InfoBody() const {
  std::string body = "{\"model_id\":";
  AppendJsonString(body, model_id_);
  body += ",\"architecture\":";
  AppendJsonString(body, config_.architecture);
  body += ",\"model_dtype\":";
  AppendJsonString(body, worker_info_ ? worker_info_->dtype() : "unknown");
  body += ",\"model_type\":";
  if (reranker_) {
    body += "{\"reranker\":{\"id2label\":{";
    for (size_t i = 0; i < config_.id2label.size(); ++i) {
      body += (i ? ",\"" : "\"") + std::to_string(i) + "\":";
      AppendJsonString(body, config_.id2label[i]);
    }
    body += "}}}";
  } else {
    body += "{\"embedding\":{\"pooling\":";
    if (sentence_transformers_.pooling) {
      std::string pooling(engine::ops::PoolingModeName(*sentence_transformers_.pooling));
      std::replace(pooling.begin(), pooling.end(), '_', '-');
      AppendJsonString(body, pooling);
    } else {
      body += "null";
    }
    body += "}}";
  }
  body += ",\"backend\":";
  AppendJsonString(body, worker_info_ ? worker_info_->backend() : "unknown");
  if (worker_info_ && worker_info_->has_cpu()) {
    body += ",\"cpu\":{\"kernels\":";
    AppendJsonString(body, worker_info_->cpu().kernels());
    body += ",\"gemm\":";
    AppendJsonString(body, worker_info_->cpu().gemm());
    body += ",\"features\":";
    AppendJsonString(body, worker_info_->cpu().features());
    body += '}';
  }
  body += ",\"dimensions\":" + std::to_string(dimensions_);
  body += ",\"max_input_length\":" + std::to_string(max_input_length_);
  body += ",\"max_concurrent_requests\":" + std::to_string(options_.max_concurrent_requests);
  body += ",\"max_client_batch_size\":" + std::to_string(options_.max_client_batch_size);
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
  body += "},\"version\":\"";
  body += kVersion;
  body += "\"}";
  return body;
}

}  // namespace stamen::gateway
