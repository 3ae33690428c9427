#include "gateway/inference.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "gateway/late_chunking.h"
#include "gateway/least_tokens.h"
#include "model_folder/bge_m3.h"
#include "model_folder/model_options.h"
#include "server/request_validation.h"

namespace stamen::gateway {

namespace {

using Clock = std::chrono::steady_clock;
using server::WorkKind;
using server::WorkRequest;

constexpr const char* kVersion = STAMEN_VERSION;  // CMake's project version

double Milliseconds(Clock::duration duration) { return std::chrono::duration<double, std::milli>(duration).count(); }

// The priority `named`, else low (bulk) for more inputs than `bulk_threshold` (0: never).
server::Priority NamedOrByCount(std::optional<server::Priority> named, size_t inputs, int64_t bulk_threshold) {
  if (named) return *named;
  const bool bulk = bulk_threshold > 0 && static_cast<int64_t>(inputs) > bulk_threshold;
  return bulk ? server::Priority::kLow : server::Priority::kNormal;
}

std::string TooLongMessage(const std::string& what, size_t tokens, int64_t limit) {
  return what + " has " + std::to_string(tokens) + " tokens; the model takes at most " + std::to_string(limit) +
         ". Shorten it, send \"truncate\": true, or start the server with --auto-truncate";
}

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
  if (model.config.yes_no_reranker()) {
    auto prompt = engine::ReadYesNoTemplate(options.model_dir, model.config, options.yes_no_instruction);
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

// The rows a finished job's answer is written from: a view into `done`, which outlives it.
FinishedRows RowsOf(const WorkRequest& done) {
  return {.values = reinterpret_cast<const float*>(done.output.data()),
          .columns = static_cast<size_t>(done.columns),
          .row_offsets = done.row_offsets,
          .token_ids = {reinterpret_cast<const int32_t*>(done.token_ids.data()), done.token_ids.size() / sizeof(int32_t)},
          .lengths = done.lengths};
}

}  // namespace

Status Inference::CheckModel(const GatewayOptions& options) { return DescribeModel(options).status(); }

StatusOr<std::unique_ptr<Inference>> Inference::Load(const GatewayOptions& options, metrics::Registry& registry) {
  auto inference = std::unique_ptr<Inference>(new Inference(options));
  Inference& m = *inference;
  auto model = DescribeModel(options);
  if (!model.ok()) return model.status();
  m.config_ = std::move(model->config);
  m.sentence_transformers_ = std::move(model->sentence_transformers);
  m.yes_no_template_ = std::move(model->yes_no_template);
  m.profile_ = engine::ProfileOf(m.config_, m.sentence_transformers_);
  m.kind_ = m.profile_.kind;
  m.max_input_length_ = m.profile_.max_sequence_length;
  m.pooling_ = model->pooling;
  m.dimensions_ = m.profile_.EmbeddingWidthWith(model->pooling);
  m.model_id_ = engine::ModelIdOf(options.model_dir, options.model_id);

  const int workers = options.tokenization_workers > 0
                          ? options.tokenization_workers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Loaded once (a 250k vocabulary's trie is 42 MB) and shared read-only; each pool thread
  // keeps its own scratch memory.
  auto tokenizer = engine::ModelTokenizer::Load(options.model_dir, m.config_);
  if (!tokenizer.ok()) return tokenizer.status();
  m.tokenizers_.push_back(std::move(tokenizer.value()));
  while (m.tokenizers_.size() < static_cast<size_t>(workers)) {
    m.tokenizers_.push_back(m.tokenizers_.front()->ShareWithNewScratch());
  }
  if (m.sentence_transformers_.multi_vector.enabled) {
    auto inputs = MultiVectorInputs::Resolve(m.sentence_transformers_.multi_vector, *m.tokenizers_.front());
    if (!inputs.ok()) return Status::Error(options.model_dir + ": " + inputs.status().message());
    m.multi_vector_ = std::move(inputs.value());
  }
  if (m.config_.bge_m3.enabled) {
    auto dropped = engine::BgeM3DroppedIds(options.model_dir, *m.tokenizers_.front());
    if (!dropped.ok()) return dropped.status();
    m.bge_m3_dropped_ids_ = std::move(dropped.value());
  }

  m.dispatcher_ = std::make_unique<Dispatcher>(options.dispatcher, registry);
  if (options.in_process_worker) {
    m.dispatcher_->AddWorker(options.in_process_worker);
  } else {
    const auto call_timeout = options.dispatcher.call_timeout;
    STAMEN_RETURN_IF_ERROR(m.dispatcher_->SetWorkerAddresses(options.worker_addresses, [call_timeout](const std::string& address) {
      return std::make_shared<GrpcBackend>(address, call_timeout);
    }));
  }
  double warm_up_rate = 0;
  // Workers still starting get 2 s in all to answer (each waits for its connection).
  const auto answer_by = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (const auto& worker : m.dispatcher_->workers()) {
    auto info = worker->backend->FetchInfo(TimeLeft(answer_by));
    if (!info.ok()) {
      spdlog::warn("gateway: worker {} does not answer yet: {}", worker->backend->address(), info.status().message());
      continue;
    }
    if (!m.worker_info_) m.worker_info_ = *info;
    warm_up_rate += info->warm_up_tokens_per_second();
    // /info reports the gateway's version; say so when a worker runs another build.
    if (info->version() != kVersion) {
      spdlog::warn("gateway: worker {} runs stamen {}, the gateway {}", worker->backend->address(),
                   info->version().empty() ? "of unknown version" : info->version(), kVersion);
    }
    // The worker's engine works out the same profile from its folder; a worker that differs
    // would answer with other widths, limits or kinds than the gateway checks and reports.
    STAMEN_RETURN_IF_ERROR(CheckWorkerServes(*info, worker->backend->address(), m.config_.architecture, m.profile_));
  }
  m.dispatcher_->SeedRate(warm_up_rate);
  m.dispatcher_->Start();
  m.pool_ = std::make_unique<TaskPool>(static_cast<size_t>(workers));

  m.tokenization_seconds_ = &registry.AddHistogram("stamen_gateway_tokenization_seconds", "Tokenization time per request",
                                                   metrics::ExponentialBuckets(0.00005, 2, 16));
  m.tokens_total_ = &registry.AddCounter("stamen_gateway_tokens_total", "Tokens sent to workers");
  m.client_disconnects_ = &registry.AddCounter(
      "stamen_gateway_client_disconnects_total",
      "Requests whose client hung up before the answer; their work not yet computed was cancelled");
  m.served_ = {inference.get()};
  return inference;
}

Inference::~Inference() { Stop(); }

void Inference::Stop() {
  pool_.reset();        // runs what is queued
  dispatcher_.reset();  // stops health checks
}

int64_t Inference::tokenizer_vocabulary_size() const {
  return static_cast<int64_t>(tokenizers_.front()->VocabularySize());
}

std::string ModelNames(const std::vector<const Inference*>& models) {
  std::string names;
  for (const Inference* model : models) names += (names.empty() ? "'" : ", '") + model->model_id() + "'";
  return names;
}

std::optional<v1::InfoResponse> Inference::WorkerInfo() const {
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

std::string Inference::OtherModelsOfKind(bool embedders) const {
  std::vector<const Inference*> others;
  for (const Inference* model : served_) {
    if (model != this && model->reranker() != embedders) others.push_back(model);
  }
  if (others.empty()) return "";
  return std::string("; this server's ") + (embedders ? "embedding models" : "rerankers and classifiers") + ": " +
         ModelNames(others) + " (name one in \"model\", or call /models/" + others.front()->model_id_ + "/…)";
}

std::optional<ApiError> Inference::NeedEmbedder(const std::string& route, bool pooled) const {
  if (multi_vector_ && pooled) {
    return ApiError{400, "model " + model_id_ + " is a multi-vector (ColBERT) model: it gives one vector per token, "
                         "not one per input (" + route + "): use /v1/multi-vector, or /rerank, /v1/rerank and /v2/rerank "
                         "for MaxSim scores"};
  }
  if (!reranker()) return std::nullopt;
  return ApiError{400, "model " + model_id_ + " is a " + (kind_ == ModelKind::kReranker ? "reranker" : "classifier") +
                           ", not an embedding model (" + route + "): use " +
                           (kind_ == ModelKind::kReranker ? "/rerank, /v1/rerank or /predict" : "/predict") +
                           OtherModelsOfKind(true)};
}

std::optional<ApiError> Inference::NeedClassifier(const std::string& what) const {
  if (reranker()) return std::nullopt;
  return ApiError{400, "model " + model_id_ + " is an embedding model, not a " + what +
                           ": use /embed or /v1/embeddings" + OtherModelsOfKind(false)};
}

std::optional<ApiError> Inference::CheckBatchSize(size_t count, const char* items) const {
  if (static_cast<int64_t>(count) <= options_.max_client_batch_size) return std::nullopt;
  return ApiError{413, "batch of " + std::to_string(count) + " " + items + " exceeds --max-client-batch-size " +
                           std::to_string(options_.max_client_batch_size)};
}

std::optional<ApiError> Inference::CheckDimensions(const char* field, int64_t dimensions) const {
  if (dimensions <= dimensions_) return std::nullopt;
  return ApiError{400, std::string("'") + field + "' " + std::to_string(dimensions) + " exceeds the model's " +
                           std::to_string(dimensions_)};
}

int64_t Inference::LeastTokensOf(const std::vector<Input>& inputs) const {
  int64_t least_tokens = 0;
  for (const Input& input : inputs) least_tokens += LeastInputTokens(input, max_input_length_);
  return least_tokens;
}

std::optional<ApiError> Inference::CheckTokenStates(const std::string& route, int64_t tokens, int64_t columns) const {
  if (tokens * columns <= options_.max_token_states) return std::nullopt;
  return ApiError{413, route + " would answer " + std::to_string(tokens) + " token vectors of " +
                           std::to_string(columns) + " floats, more than " + std::to_string(options_.max_token_states) +
                           " floats in all: send fewer or shorter inputs"};
}

std::variant<std::string, ApiError> Inference::Prompt(const std::string& prompt_name) const {
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

std::variant<std::string, ApiError> Inference::TaskPrompt(const TaskAdapter& task, const std::string& prompt_name) const {
  // A task brings its own instruction (as the model's remote code puts it before each text),
  // unless the caller names a prompt.
  if (task.index >= 0 && prompt_name.empty()) return task.prompt;
  return Prompt(prompt_name);
}

server::Priority Inference::PriorityOf(std::optional<server::Priority> named, size_t inputs) const {
  return NamedOrByCount(named, inputs, options_.bulk_threshold);
}

server::Priority Inference::ScoringPriorityOf(std::optional<server::Priority> named, size_t inputs) const {
  return NamedOrByCount(named, inputs, options_.rerank_bulk_threshold);
}

std::optional<ApiError> Inference::TokenizeInputs(engine::ModelTokenizer& tokenizer, const std::vector<Input>& inputs,
                                                  const std::string& prompt, bool truncate, Truncation direction,
                                                  Job& job, int64_t max_tokens) const {
  WorkRequest& work = *job.work_;
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
    work.lengths.push_back(static_cast<int32_t>(ids.size()));
  }
  work.token_ids.assign(reinterpret_cast<const char*>(all_ids.data()), all_ids.size() * sizeof(int32_t));
  return std::nullopt;
}

std::optional<ApiError> Inference::TokenizeChunks(engine::ModelTokenizer& tokenizer, const EmbedCall& call,
                                                  const std::string& prompt, Job& job,
                                                  std::vector<std::vector<TextSpan>>* chunks,
                                                  std::vector<std::vector<int64_t>>* rows) const {
  WorkRequest& work = *job.work_;
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
    work.lengths.insert(work.lengths.end(), plan.lengths.begin(), plan.lengths.end());
    work.span_counts.insert(work.span_counts.end(), plan.span_counts.begin(), plan.span_counts.end());
    work.spans.insert(work.spans.end(), plan.spans.begin(), plan.spans.end());
    for (int64_t& row : plan.row_of_chunk) row += first_row;
    first_row += static_cast<int64_t>(plan.row_of_chunk.size());
    rows->push_back(std::move(plan.row_of_chunk));
  }
  work.token_ids.assign(reinterpret_cast<const char*>(all_ids.data()), all_ids.size() * sizeof(int32_t));
  return std::nullopt;
}

std::optional<ApiError> Inference::TokenizeScored(engine::ModelTokenizer& tokenizer, const std::vector<ScoredText>& texts,
                                                  bool truncate, Truncation direction, const std::string& what,
                                                  Job& job) const {
  WorkRequest& work = *job.work_;
  std::vector<int32_t> ids, types, all_ids, all_types;
  const size_t limit = truncate ? static_cast<size_t>(max_input_length_) : 0;
  const auto side = direction == Truncation::kLeft ? tokenizer::TruncationSide::kLeft : tokenizer::TruncationSide::kRight;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].second && config_.yes_no_reranker()) {
      tokenizer.EncodeYesNoPair(yes_no_template_, texts[i].first, *texts[i].second, limit, &ids);
      types.assign(ids.size(), 0);
    } else if (texts[i].second && !config_.pair_text_before_document.empty()) {
      // One text, cut at its end as the model card's tokenizer(…, truncation=True) cuts it.
      std::string text = config_.pair_text_before_query;
      text.append(texts[i].first).append(config_.pair_text_before_document).append(*texts[i].second);
      tokenizer.Encode(text, limit, &ids);
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
    work.lengths.push_back(static_cast<int32_t>(ids.size()));
  }
  work.kind = WorkKind::kScore;
  work.token_ids.assign(reinterpret_cast<const char*>(all_ids.data()), all_ids.size() * sizeof(int32_t));
  if (config_.type_vocab_size > 1) {
    work.token_type_ids.assign(reinterpret_cast<const char*>(all_types.data()), all_types.size() * sizeof(int32_t));
  }
  return std::nullopt;
}

void Inference::EncodeMultiVector(engine::ModelTokenizer& tokenizer, const std::vector<std::string>& texts, bool query,
                                  Job& job) const {
  WorkRequest& work = *job.work_;
  std::vector<int32_t> ids;
  bool any_key_length = false;
  for (const std::string& text : texts) {
    const int32_t keys = multi_vector_->Encode(tokenizer, text, query, &ids);
    work.token_ids.append(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int32_t));
    work.lengths.push_back(static_cast<int32_t>(ids.size()));
    work.key_lengths.push_back(keys);
    any_key_length = any_key_length || keys > 0;
  }
  if (!any_key_length) work.key_lengths.clear();
  if (!query) work.skip_token_ids = multi_vector_->skiplist_ids();
}

void Inference::EncodeMaxSim(engine::ModelTokenizer& tokenizer, const std::string& query,
                             const std::vector<std::string>& documents, Job& job) const {
  // The query once (sequence 0), then each document: the worker scores each document against
  // the query's vectors it computed.
  WorkRequest& work = *job.work_;
  work.kind = WorkKind::kMaxSim;
  EncodeMultiVector(tokenizer, {query}, /*query=*/true, job);
  Job encoded_job;
  EncodeMultiVector(tokenizer, documents, /*query=*/false, encoded_job);
  const WorkRequest& encoded = *encoded_job.work_;
  work.token_ids += encoded.token_ids;
  work.lengths.insert(work.lengths.end(), encoded.lengths.begin(), encoded.lengths.end());
  if (!work.key_lengths.empty()) work.key_lengths.resize(work.lengths.size(), 0);
  work.skip_token_ids = encoded.skip_token_ids;
}

bool Inference::ClientGone(const std::shared_ptr<http::ClientWatch>& client, const Reply& respond) {
  if (!client || !client->gone()) return false;
  client_disconnects_->Increment();
  // Nobody reads this answer; it completes the request's bookkeeping (499: nginx's "client
  // closed request").
  respond.Error({499, "the client closed the connection", "cancelled"});
  return true;
}

void Inference::Dispatch(const std::shared_ptr<http::ClientWatch>& client, std::shared_ptr<WorkRequest> job,
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

double Inference::FinishTokenization(server::WorkRequest& work, Clock::time_point start) {
  const Clock::time_point now = Clock::now();
  work.deadline = now + options_.request_timeout;
  const double milliseconds = Milliseconds(now - start);
  tokenization_seconds_->Observe(milliseconds / 1000);
  tokens_total_->Increment(static_cast<uint64_t>(work.total_tokens()));
  return milliseconds;
}

void Inference::Run(const http::Request& request, int64_t least_tokens, TokenizeJob tokenize, AnswerJob answer,
                    Reply reply) {
  Dispatcher::Reservation reservation;
  const std::string refusal =
      dispatcher_->ReserveBeforeTokenizing(least_tokens, Clock::now() + options_.request_timeout, &reservation);
  if (!refusal.empty()) return reply.Error({429, "overloaded: " + refusal, "overloaded"});
  pool_->Post([this, tokenize = std::move(tokenize), answer = std::move(answer), reply, client = request.client,
               reservation = std::move(reservation)](size_t thread) mutable {
    if (ClientGone(client, reply)) return;
    const Clock::time_point tokenization_start = Clock::now();
    Job job;
    if (auto error = tokenize(*tokenizers_[thread], job)) return reply.Error(*error);
    const double tokenization_ms = FinishTokenization(*job.work_, tokenization_start);
    reservation.reset();  // the job is admitted by its real count now
    Dispatch(client, std::move(job.work_), [answer, reply, tokenization_ms](WorkRequest& done) {
      if (!done.status.ok()) return reply.Error(DispatchError(done.status));
      auto body = answer(RowsOf(done));
      if (auto* error = std::get_if<ApiError>(&body)) return reply.Error(*error);
      reply(TimedResponse(std::move(std::get<std::string>(body)), tokenization_ms, done.timing));
    });
  });
}

void Inference::RunTokenRows(const http::Request& request, TokenRowsJob job, AnswerJob answer, Reply reply) {
  if (auto error = CheckBatchSize(job.inputs.size(), "inputs")) return reply.Error(*error);
  const int64_t least_tokens = LeastTokensOf(job.inputs);
  // Rows per token (every token's state, bge-m3's outputs) grow with the tokens: capped by
  // --max-token-states once they are counted.
  const int64_t token_columns = job.kind == WorkKind::kTokenEmbed ? config_.hidden_size
                                : job.kind == WorkKind::kDenseSparseColbert
                                    ? engine::BgeM3RowLayout{.hidden_size = config_.hidden_size}.columns()
                                    : 0;
  auto tokenize = [this, rows = std::make_shared<TokenRowsJob>(std::move(job)), token_columns, path = request.path](
                      engine::ModelTokenizer& tokenizer, Job& job) -> std::optional<ApiError> {
    if (auto error = TokenizeInputs(tokenizer, rows->inputs, rows->prompt, rows->truncate, rows->direction, job)) {
      return error;
    }
    if (auto error = CheckTokenStates(path, job.total_tokens(), token_columns)) return error;
    job.set_kind(rows->kind);
    job.set_pooling(rows->pooling);
    job.set_normalize(false);
    job.set_adapter(rows->adapter);
    job.set_priority(PriorityOf(rows->priority, rows->inputs.size()));
    return std::nullopt;
  };
  Run(request, least_tokens, std::move(tokenize), std::move(answer), std::move(reply));
}

void Inference::OnPool(std::function<void(engine::ModelTokenizer&)> work) {
  pool_->Post([this, work = std::move(work)](size_t thread) { work(*tokenizers_[thread]); });
}

}  // namespace stamen::gateway
