// One served model's inference, between the route handlers and its workers: the tokenizer (one
// per pool thread), the pool that tokenizes requests and writes answers, the Dispatcher over
// the model's workers, and what the model folder says (kind, widths, maximum length, prompts,
// a yes/no reranker's template, multi-vector and bge-m3 rules). A handler parses its body,
// asks this for its checks, and runs its work through `Run`; routing, the API key, CORS and
// the response metrics are Gateway's (gateway.h).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/metrics.h"
#include "gateway/api.h"
#include "gateway/dispatcher.h"
#include "gateway/finished_rows.h"
#include "gateway/gateway_options.h"
#include "gateway/multi_vector.h"
#include "gateway/routes.h"
#include "gateway/task_adapter.h"
#include "gateway/task_pool.h"
#include "http/http_server.h"
#include "model_folder/model_config.h"
#include "model_folder/model_profile.h"
#include "model_folder/model_tokenizer.h"

namespace stamen::gateway {

using engine::ModelKind;  // model_folder/model_profile.h

// A job as a route handler prepares it: Inference's Tokenize… and Encode… calls fill its
// sequences, and the handler says how the workers run them. The gateway–worker job itself
// (server::WorkRequest: its wire fields, the dispatcher's offsets and bookkeeping) stays inside
// Inference and the dispatcher: no handler reads or writes it.
class Job {
 public:
  void set_kind(server::WorkKind kind) { work_->kind = kind; }
  // Unset: the model's default.
  void set_pooling(std::optional<engine::ops::PoolingMode> pooling) { work_->pooling = pooling; }
  // Embeddings: L2-normalised after `dimensions` (the default), or not.
  void set_normalize(bool normalize) { work_->normalize = normalize; }
  // Embeddings: the leading dimensions kept; 0 (the default): all.
  void set_dimensions(int64_t dimensions) { work_->dimensions = dimensions; }
  // The task adapter every sequence runs with (task_adapter.h); −1 (the default): none.
  void set_adapter(int32_t adapter) { work_->adapter = adapter; }
  void set_priority(server::Priority priority) { work_->priority = priority; }
  // The tokens of the sequences filled so far.
  int64_t total_tokens() const { return work_->total_tokens(); }

 private:
  friend class Inference;
  Job() : work_(std::make_shared<server::WorkRequest>()) {}
  std::shared_ptr<server::WorkRequest> work_;
};

class Inference {
 public:
  // Reads the model folder of `options`, loads its tokenizer for the pool's threads, connects
  // its workers (each must serve the same model) and starts the pool; its metrics go to
  // `registry`.
  static StatusOr<std::unique_ptr<Inference>> Load(const GatewayOptions& options, metrics::Registry& registry);
  // What Load checks of the model folder against `options` (its configs, the pooling against
  // the model's head, the prompt names), for callers that load a worker first.
  static Status CheckModel(const GatewayOptions& options);
  ~Inference();
  // Runs what is queued on the pool, then stops the dispatcher (its health checks); the
  // model's facts stay readable.
  void Stop();

  // The model's facts.
  const GatewayOptions& options() const { return options_; }
  const std::string& model_id() const { return model_id_; }
  const engine::ModelConfig& config() const { return config_; }
  const engine::SentenceTransformersConfig& sentence_transformers() const { return sentence_transformers_; }
  ModelKind kind() const { return kind_; }
  bool reranker() const { return kind_ != ModelKind::kEmbedding; }  // a classification head
  int64_t dimensions() const { return dimensions_; }                // under --pooling
  int64_t max_input_length() const { return max_input_length_; }
  engine::ops::PoolingMode pooling() const { return pooling_; }  // --pooling, else the model's
  bool splade() const { return pooling_ == engine::ops::PoolingMode::kSplade; }  // /embed_sparse
  // A bge-m3 folder: /embed_multi, and its sparse and ColBERT outputs on /embed_sparse and
  // /v1/multi-vector; the ids its lexical weights drop.
  bool bge_m3() const { return config_.bge_m3.enabled; }
  const std::vector<int32_t>& bge_m3_dropped_ids() const { return bge_m3_dropped_ids_; }
  // A multi-vector (ColBERT) model's query and document rules (/v1/multi-vector, MaxSim rerank).
  const std::optional<MultiVectorInputs>& multi_vector() const { return multi_vector_; }
  size_t tokenization_threads() const { return tokenizers_.size(); }
  int64_t tokenizer_vocabulary_size() const;

  // The workers: whether one answers its health checks, how many there are, the seconds after
  // which a request refused for load may try again.
  bool Healthy() const { return dispatcher_->AnyHealthy(); }
  size_t worker_count() const { return dispatcher_->workers().size(); }
  int RetryAfterSeconds() const { return dispatcher_->RetryAfterSeconds(); }
  // What the first worker to answer runs on (dtype, backend, CPU path), for /info: asked at
  // start, and again (at most once a second) while no worker has answered, so a gateway
  // started before its workers tells the truth once one is up (issue 45, item 12).
  std::optional<v1::InfoResponse> WorkerInfo() const;

  // The models served beside this one, itself included (the errors of a request for the
  // wrong kind of model name the others).
  void ServeAlongside(std::vector<const Inference*> models) { served_ = std::move(models); }

  // 400 unless the model is an embedding model (asked on `route`) / a classifier (asked as `what`).
  // `pooled`: the route wants one vector per input, which a multi-vector model does not give.
  std::optional<ApiError> NeedEmbedder(const std::string& route, bool pooled = true) const;
  std::optional<ApiError> NeedClassifier(const std::string& what) const;
  // 413 when a request carries more than --max-client-batch-size `items` ("inputs", …).
  std::optional<ApiError> CheckBatchSize(size_t count, const char* items) const;
  // 400 when a request's `field` ('dimensions', 'output_dimension') asks for more dimensions
  // than the model gives.
  std::optional<ApiError> CheckDimensions(const char* field, int64_t dimensions) const;
  // A lower bound of the tokens of texts (or token ids), each cut to the model's length
  // (least_tokens.h): what Run is given for the usual inputs.
  int64_t LeastTokensOf(const std::vector<Input>& inputs) const;
  // 413 when an answer of one vector of `columns` floats per token of `tokens` would pass
  // --max-token-states (a route whose rows grow with the tokens: /embed_all, /v1/multi-vector, …).
  std::optional<ApiError> CheckTokenStates(const std::string& route, int64_t tokens, int64_t columns) const;

  // The prompt text for `prompt_name` (or the defaults), or an error.
  std::variant<std::string, ApiError> Prompt(const std::string& prompt_name) const;
  // The prompt of a request that runs `task`: the task's own unless it names a prompt.
  std::variant<std::string, ApiError> TaskPrompt(const TaskAdapter& task, const std::string& prompt_name) const;
  // Whether a request truncates: what it says, else --auto-truncate.
  bool Truncates(std::optional<bool> truncate) const { return truncate.value_or(options_.auto_truncate); }
  // The priority a request runs at: the one it names, else by its number of inputs against
  // --bulk-threshold (embedding routes) or --rerank-bulk-threshold (scoring routes).
  server::Priority PriorityOf(std::optional<server::Priority> named, size_t inputs) const;
  server::Priority ScoringPriorityOf(std::optional<server::Priority> named, size_t inputs) const;

  // Tokenizes `inputs` (texts with `prompt` before them, or token ids) into `job`'s ids and
  // lengths, each cut to the model's length (or `max_tokens`, when fewer) when `truncate`; or
  // the error of the first bad one.
  std::optional<ApiError> TokenizeInputs(engine::ModelTokenizer& tokenizer, const std::vector<Input>& inputs,
                                         const std::string& prompt, bool truncate, Truncation direction,
                                         Job& job, int64_t max_tokens = 0) const;
  // Late chunking (late_chunking.h): each text input of `call`, `prompt` before it, tokenized
  // whole and planned into windows and chunk spans in `job`; (*chunks)[i] are input i's chunks
  // (the call's, or those its rule cuts) and (*rows)[i][k] the output row of its chunk k.
  // Token id inputs have no text offsets and are refused.
  std::optional<ApiError> TokenizeChunks(engine::ModelTokenizer& tokenizer, const EmbedCall& call,
                                         const std::string& prompt, Job& job,
                                         std::vector<std::vector<TextSpan>>* chunks,
                                         std::vector<std::vector<int64_t>>* rows) const;
  // A text, or a pair with the pair template (a yes/no reranker's chat template), for a scoring job.
  struct ScoredText {
    std::string_view first;
    std::optional<std::string_view> second;
  };
  // Tokenizes `texts` into `job`'s ids, token types and lengths, when `truncate` cut on
  // `direction` (texts) or longest-first (pairs); an over-long one is a 422 naming it "`what` i".
  std::optional<ApiError> TokenizeScored(engine::ModelTokenizer& tokenizer, const std::vector<ScoredText>& texts,
                                         bool truncate, Truncation direction, const std::string& what,
                                         Job& job) const;
  // `texts` as queries or documents of the multi-vector model into `job`'s ids, lengths, key
  // lengths and (documents) skiplist ids.
  void EncodeMultiVector(engine::ModelTokenizer& tokenizer, const std::vector<std::string>& texts, bool query,
                         Job& job) const;
  // A MaxSim job (WorkKind::kMaxSim) of the multi-vector model: `query` once, then each of
  // `documents`, each cut to the model's query and document lengths.
  void EncodeMaxSim(engine::ModelTokenizer& tokenizer, const std::string& query,
                    const std::vector<std::string>& documents, Job& job) const;

  // The one pipeline of every route that computes. First, 429 when admission control would
  // refuse `least_tokens` (a lower bound of the job's tokens, counted from the body: least_tokens.h)
  // now, before anything is tokenized; otherwise those tokens are held in the budget until the job
  // is admitted by its real count (Dispatcher::ReserveBeforeTokenizing). Then on the pool (unless
  // the client is already gone), `tokenize` fills a new job's sequences and options, or gives the
  // error to answer; the job runs on the workers, and `answer` writes the body of the 200 from the
  // finished job's rows (or the error to answer, when the worker's answer cannot be read), on the
  // pool too, never on a worker's thread. Worker errors and the timing headers are answered here.
  using TokenizeJob = std::function<std::optional<ApiError>(engine::ModelTokenizer& tokenizer, Job& job)>;
  using AnswerJob = std::function<std::variant<std::string, ApiError>(const FinishedRows& done)>;
  void Run(const http::Request& request, int64_t least_tokens, TokenizeJob tokenize, AnswerJob answer, Reply reply);
  // Inputs to run unnormalised as `kind` with `pooling`, one or more rows each (/embed_all,
  // /embed_sparse, bge-m3's outputs).
  struct TokenRowsJob {
    std::vector<Input> inputs{};
    std::string prompt{};
    bool truncate = false;
    Truncation direction = Truncation::kRight;
    std::optional<server::Priority> priority;
    server::WorkKind kind = server::WorkKind::kEmbed;
    std::optional<engine::ops::PoolingMode> pooling{};
    int32_t adapter = -1;  // the task adapter the inputs run with (task_adapter.h); −1: none
  };
  // Checks `job`'s size and the load, tokenizes its inputs on the pool (413 when rows per token
  // would pass --max-token-states), runs it and answers `answer`'s body.
  void RunTokenRows(const http::Request& request, TokenRowsJob job, AnswerJob answer, Reply reply);
  // Work of the tokenizer alone (/tokenize, /decode): `work` on the pool with its thread's tokenizer.
  void OnPool(std::function<void(engine::ModelTokenizer& tokenizer)> work);

 private:
  explicit Inference(const GatewayOptions& options) : options_(options) {}
  // With several models: the served models of the kind this one is not (embedders when
  // `embedders`), as a sentence to end those errors with; empty when there are none.
  std::string OtherModelsOfKind(bool embedders) const;
  // Runs `job` on the workers and calls `done` with it on the pool; when the HTTP client hangs
  // up first, the job's work still queued on the workers is cancelled.
  void Dispatch(const std::shared_ptr<http::ClientWatch>& client, std::shared_ptr<server::WorkRequest> job,
                std::function<void(server::WorkRequest&)> done);
  // True (and the request answered) when its client is already gone: no work is started.
  bool ClientGone(const std::shared_ptr<http::ClientWatch>& client, const Reply& reply);
  // Stamps the job's deadline and records the tokenization metrics for its tokens, tokenized
  // since `start`; returns the milliseconds it took.
  double FinishTokenization(server::WorkRequest& work, std::chrono::steady_clock::time_point start);

  GatewayOptions options_;
  engine::ModelConfig config_;
  engine::SentenceTransformersConfig sentence_transformers_;
  engine::ModelProfile profile_;  // the gateway's own, which a worker's must match
  std::string model_id_;
  ModelKind kind_ = ModelKind::kEmbedding;
  int64_t max_input_length_ = 0;
  int64_t dimensions_ = 0;
  engine::ops::PoolingMode pooling_ = engine::ops::PoolingMode::kCls;
  // A yes/no reranker's chat template (config_.yes_no_token_ids set): rerank pairs are
  // encoded with it instead of the tokenizer's pair template.
  engine::YesNoTemplate yes_no_template_;
  std::vector<int32_t> bge_m3_dropped_ids_;
  std::optional<MultiVectorInputs> multi_vector_;
  std::vector<const Inference*> served_;  // every model of this server, this one included

  mutable std::mutex worker_info_mutex_;
  mutable std::optional<v1::InfoResponse> worker_info_;
  mutable std::chrono::steady_clock::time_point worker_info_asked_{};

  // One per pool thread, all over the same loaded tokenizer (ShareWithNewScratch).
  std::vector<std::unique_ptr<engine::ModelTokenizer>> tokenizers_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<TaskPool> pool_;

  metrics::Histogram* tokenization_seconds_ = nullptr;
  metrics::Counter* tokens_total_ = nullptr;
  metrics::Counter* client_disconnects_ = nullptr;
};

// The models' names, each quoted, comma-separated (what an unknown model's 404 lists).
std::string ModelNames(const std::vector<const Inference*>& models);

}  // namespace stamen::gateway
