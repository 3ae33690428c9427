// The HTTP gateway: routes of ../shared/docs/api.md on the Beast server, tokenization and
// input templating on a thread pool, the work chunked and balanced over workers by the
// Dispatcher, answers written as JSON (or base64) on the same pool.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "model_folder/model_config.h"
#include "model_folder/model_profile.h"
#include "model_folder/model_tokenizer.h"
#include "gateway/api.h"
#include "gateway/dispatcher.h"
#include "gateway/multi_vector.h"
#include "gateway/routes.h"
#include "gateway/task_adapter.h"
#include "gateway/task_pool.h"
#include "gateway/tei_api.h"
#include "http/http_server.h"

namespace stamen::gateway {

struct MultiVectorCall;  // a parsed /v1/multi-vector body (multi_vector_routes.cc)

struct GatewayOptions {
  std::string model_dir;  // tokenizer and model description
  std::string model_id;   // reported in /info and responses; the folder's name when empty
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  int http_threads = 2;
  int tokenization_workers = 0;  // 0: one per core
  size_t payload_limit = 16 * 1024 * 1024;  // bytes (TEI's 2 MB surprises users)
  int64_t max_client_batch_size = 2048;     // inputs per request (OpenAI's limit)
  int64_t max_concurrent_requests = 512;    // beyond: 429
  // The most floats one /embed_all answer carries (every token's vector; about 12 bytes each as
  // JSON), so that a request within the payload limit cannot make the server build gigabytes.
  int64_t max_token_states = int64_t{16} << 20;  // 64 MB computed, about 200 MB of JSON
  // The most tokens one /tokenize answer lists (about 60 bytes of JSON each), so that a body
  // within the payload limit (a few bytes a token) cannot make an answer tens of times larger.
  int64_t max_tokenize_tokens = int64_t{1} << 20;  // about 64 MB of JSON
  bool auto_truncate = false;               // truncate over-long inputs unless a request says no
  std::string default_prompt;               // text prepended when a request names no prompt
  std::string default_prompt_name;          // a prompt of the model's config, same use
  std::string api_key;                      // Bearer token required on every route but /health
  std::optional<engine::ops::PoolingMode> pooling;  // overrides the model's pooling
  // A *ForCausalLM folder as a yes/no reranker (engine/yes_no_reranker.h): on, off, or the
  // folder decides (nullopt); the worker must be told the same. Its <Instruct> when not empty.
  std::optional<bool> yes_no_reranker;
  std::string yes_no_instruction;
  std::chrono::milliseconds request_timeout{60000};
  // Origins (or "*") whose browser requests get CORS headers and preflight answers; empty: none.
  std::vector<std::string> cors_allow_origins;
  // Requests that name no priority are low priority (bulk) when they carry more inputs than
  // this, normal otherwise; 0: never. Embedding routes (an indexing job sends many inputs)
  // and rerank routes (one search's documents) have their own.
  int64_t bulk_threshold = 32;
  int64_t rerank_bulk_threshold = 0;
  DispatcherOptions dispatcher;
  // Where the work runs: an in-process worker, or gRPC worker addresses.
  std::shared_ptr<WorkerBackend> in_process_worker;
  std::vector<std::string> worker_addresses;
};

class Gateway {
 public:
  // `registry` (which must outlive the gateway) gets the gateway's metrics and is what
  // /metrics renders (an in-process worker registers its own there too).
  static StatusOr<std::unique_ptr<Gateway>> Start(const GatewayOptions& options, metrics::Registry& registry);
  // The same without an HTTP server of its own: one model of several behind a ModelRouter
  // (model_router.h), which hands it its requests.
  static StatusOr<std::unique_ptr<Gateway>> Create(const GatewayOptions& options, metrics::Registry& registry);
  // What Create checks of the model folder against `options` (its configs, the pooling against
  // the model's head, the prompt names), for callers that load a worker before the gateway.
  static Status CheckModel(const GatewayOptions& options);
  // The HTTP server of `options` (host, port, threads, payload limit) with `handler`; the
  // errors it finds itself answer in the shape of `routes`' API and with `allowed_origin`'s
  // CORS header.
  static StatusOr<std::unique_ptr<http::Server>> StartHttp(const GatewayOptions& options, const RouteTable& routes,
                                                           http::Handler handler,
                                                           std::function<std::string(std::string_view)> allowed_origin);
  ~Gateway();

  uint16_t port() const { return http_->port(); }
  const std::string& model_id() const { return model_id_; }
  // Whether a worker of this model answers its health checks.
  bool Healthy() const { return dispatcher_->AnyHealthy(); }
  // The models served beside this one, itself included, in the order /v1/models lists them.
  void ServeAlongside(std::vector<const Gateway*> models) { served_ = std::move(models); }
  // Answers one request. `refusal` (an unknown model, found by the router) is answered
  // instead, after the API key check, so that a client without the key learns nothing.
  void Handle(http::Request request, http::Respond respond, std::optional<ApiError> refusal = std::nullopt);
  // What /info answers; what the router's /models/{name}/info does too.
  std::string InfoBody() const;
  // The start line: model, kind, address, threads and workers.
  void LogStart(uint16_t port) const;
  // What access-control-allow-origin answers a request from `origin`: "*", the origin itself,
  // or empty when --cors-allow-origin does not allow it.
  std::string AllowedOrigin(std::string_view origin) const;

  // The routes served (tests compare them with openapi.json).
  const RouteTable& routes() const { return *routes_; }
  // Stops accepting connections, lets requests in flight finish (up to `drain`), stops.
  void Shutdown(std::chrono::milliseconds drain);

 private:
  explicit Gateway(metrics::Registry& registry) : registry_(registry) {}
  // Every route: path, method, API family, handler (the one place that lists them).
  std::vector<Route> Routes();
  // The CORS headers of an answer to an allowed origin (AllowedOrigin's; none when empty).
  static void AddOriginHeaders(const std::string& allowed, http::Response& response);
  void Health(Reply reply);
  void Embed(const http::Request& request, bool openai, Reply reply);
  // Which API's rerank answer: TEI's [{index, score}], Cohere v1's {model, results, usage},
  // Cohere v2's {id, results, meta}.
  enum class RerankShape { kTei, kCohereV1, kCohereV2 };
  void Rerank(const http::Request& request, RerankShape shape, Reply reply);
  // Rerank on a multi-vector model: MaxSim scores of each document against the query.
  void RerankByMaxSim(const http::Request& request, std::shared_ptr<RerankCall> call, RerankShape shape, Reply reply);
  // The answer in `shape` with the documents ordered by their `scores`, best first (top_n of them).
  std::string RerankBody(const RerankCall& call, RerankShape shape, const std::vector<double>& scores,
                         size_t total_tokens) const;
  // Cohere's v2 routes beyond rerank (cohere_routes.cc).
  void CohereEmbed(const http::Request& request, Reply reply);
  void Tokenize(const http::Request& request, Reply reply);
  void Models(const http::Request& request, Reply reply);
  void Model(const http::Request& request, Reply reply);
  // TEI's other routes (tei_routes.cc).
  void TeiRoot(const http::Request& request, Reply reply);  // POST / and /invocations
  void Predict(const http::Request& request, Reply reply);
  void Similarity(const http::Request& request, Reply reply);
  void Decode(const http::Request& request, Reply reply);
  void EmbedAll(const http::Request& request, Reply reply);     // every token's vector
  void EmbedSparse(const http::Request& request, Reply reply);  // SPLADE models' sparse vectors
  // Jina's POST /v1/multi-vector: a multi-vector model's token vectors (multi_vector_routes.cc).
  void MultiVector(const http::Request& request, Reply reply);
  // The same on bge-m3: its ColBERT vectors.
  void BgeM3MultiVector(const http::Request& request, std::shared_ptr<MultiVectorCall> call, Reply reply);
  // `texts` as queries or documents of the multi-vector model into `job`'s ids, lengths, key
  // lengths and (documents) skiplist ids.
  void EncodeMultiVector(engine::ModelTokenizer& tokenizer, const std::vector<std::string>& texts, bool query,
                         server::WorkRequest& job) const;
  // The one pipeline of every route that computes: on the pool (unless the client is already
  // gone), `tokenize` fills a new job's sequences and options, or gives the error to answer; the
  // job runs on the workers (Dispatch), and `answer` writes the body of the 200 from the
  // finished job (or the error to answer, when the worker's answer cannot be read), on the pool
  // too. Worker errors and the timing headers are answered here.
  using TokenizeJob = std::function<std::optional<ApiError>(engine::ModelTokenizer& tokenizer, server::WorkRequest& job)>;
  using AnswerJob = std::function<std::variant<std::string, ApiError>(const server::WorkRequest& done)>;
  void Run(const http::Request& request, TokenizeJob tokenize, AnswerJob answer, Reply reply);
  // bge-m3's dense, sparse and ColBERT outputs from one forward (bge_m3_routes.cc).
  void EmbedMulti(const http::Request& request, Reply reply);
  // What /embed_all and /embed_sparse share: TEI's embed body parsed, its inputs tokenized and
  // run as `kind` with `pooling`, not normalised, and answered as a JSON array with one entry
  // per input, which `write` appends from that input's `count` rows of `columns` floats and its
  // token ids.
  using RowsWriter = std::function<void(std::string& out, const float* rows, size_t count, size_t columns,
                                        std::span<const int32_t> ids)>;
  void EmbedRows(const http::Request& request, server::WorkKind kind, std::optional<engine::ops::PoolingMode> pooling,
                 RowsWriter write, Reply reply);
  // Inputs to run unnormalised as `kind` with `pooling` (EmbedRows, EmbedMulti).
  struct TokenRowsJob {
    std::vector<Input> inputs;
    std::string prompt;
    bool truncate = false;
    Truncation direction = Truncation::kRight;
    std::optional<server::Priority> priority;
    server::WorkKind kind = server::WorkKind::kEmbed;
    std::optional<engine::ops::PoolingMode> pooling;
  };
  // Checks `job`'s size and the load, tokenizes its inputs on the pool (413 when rows per token
  // would pass --max-token-states), runs it and answers `answer`'s body.
  void RunTokenRows(const http::Request& request, TokenRowsJob job, AnswerJob answer, Reply reply);
  // Tokenizes `inputs` (texts with `prompt` before them, or token ids) into `job`'s ids and
  // lengths, each cut to the model's length (or `max_tokens`, when fewer) when `truncate`; or
  // the error of the first bad one.
  std::optional<ApiError> TokenizeInputs(engine::ModelTokenizer& tokenizer, const std::vector<Input>& inputs,
                                         const std::string& prompt, bool truncate, Truncation direction,
                                         server::WorkRequest& job, int64_t max_tokens = 0) const;
  // Late chunking (late_chunking.h): each text input of `call`, `prompt` before it, tokenized
  // whole and planned into windows and chunk spans in `job`; (*chunks)[i] are input i's chunks
  // (the call's, or those its rule cuts) and (*rows)[i][k] the output row of its chunk k.
  // Token id inputs have no text offsets and are refused.
  std::optional<ApiError> TokenizeChunks(engine::ModelTokenizer& tokenizer, const EmbedCall& call,
                                         const std::string& prompt, server::WorkRequest& job,
                                         std::vector<std::vector<TextSpan>>* chunks,
                                         std::vector<std::vector<int64_t>>* rows) const;
  // A text, or a pair with the pair template, for a scoring job.
  struct ScoredText {
    std::string_view first;
    std::optional<std::string_view> second;
  };
  // Tokenizes `texts` into `job`'s ids, token types and lengths, when `truncate` cut on
  // `direction` (texts) or longest-first (pairs); an over-long one is a 422 naming it "`what` i".
  std::optional<ApiError> TokenizeScored(engine::ModelTokenizer& tokenizer, const std::vector<ScoredText>& texts,
                                         bool truncate, Truncation direction, const std::string& what,
                                         server::WorkRequest& job) const;
  // 400 unless the model is an embedding model (asked on `route`) / a classifier (asked as `what`).
  // `pooled`: the route wants one vector per input, which a multi-vector model does not give.
  std::optional<ApiError> NeedEmbedder(const std::string& route, bool pooled = true) const;
  std::optional<ApiError> NeedClassifier(const std::string& what) const;
  // With several models: the served models of the kind this one is not (embedders when
  // `embedders`), as a sentence to end those errors with; empty when there are none.
  std::string OtherModelsOfKind(bool embedders) const;
  // Runs `job` on the workers and calls `done` with it on the pool; when the HTTP client hangs
  // up first, the job's work still queued on the workers is cancelled.
  void Dispatch(const std::shared_ptr<http::ClientWatch>& client, std::shared_ptr<server::WorkRequest> job,
                std::function<void(server::WorkRequest&)> done);
  // True (and the request answered) when its client is already gone: no work is started.
  bool ClientGone(const std::shared_ptr<http::ClientWatch>& client, const Reply& reply);
  // The prompt text for `prompt_name` (or the defaults), or an error.
  std::variant<std::string, ApiError> Prompt(const std::string& prompt_name) const;
  // The prompt of a request that runs `task`: the task's own unless it names a prompt.
  std::variant<std::string, ApiError> TaskPrompt(const TaskAdapter& task, const std::string& prompt_name) const;
  // Stamps the job's deadline and records the tokenization metrics for its tokens, tokenized
  // since `start`; returns the milliseconds it took.
  double FinishTokenization(server::WorkRequest& job, std::chrono::steady_clock::time_point start);
  // 400 for int8 / uint8 of vectors that are not unit length (their calibration range).
  std::optional<ApiError> CheckQuantizable(EmbeddingType type, bool normalized) const;
  // 429 when admission control would refuse a request of `least_tokens` (a lower bound of its
  // tokens, least_tokens.h) now: answered before its body is tokenized.
  std::optional<ApiError> RefuseForLoad(int64_t least_tokens) const;
  // The same for texts (or token ids), each cut to the model's length.
  std::optional<ApiError> RefuseForLoad(const std::vector<Input>& inputs) const;
  // 413 when an answer of one vector of `columns` floats per token of `tokens` would pass
  // --max-token-states (a route whose rows grow with the tokens: /embed_all, /v1/multi-vector, …).
  std::optional<ApiError> CheckTokenStates(const std::string& route, int64_t tokens, int64_t columns) const;
  // 413 when a request carries more than --max-client-batch-size `items` ("inputs", …).
  std::optional<ApiError> CheckBatchSize(size_t count, const char* items) const;
  void CountResponse(const std::string& route, int status);
  // The priority a request runs at: the one it names, else by its number of inputs.
  static server::Priority PriorityOf(std::optional<server::Priority> named, size_t inputs, int64_t bulk_threshold);

  GatewayOptions options_;
  metrics::Registry& registry_;
  engine::ModelConfig config_;
  engine::SentenceTransformersConfig sentence_transformers_;
  int64_t max_input_length_ = 0;
  int64_t dimensions_ = 0;
  std::string model_id_;
  // A yes/no reranker's chat template (config_.yes_no_token_ids set): rerank pairs are
  // encoded with it instead of the tokenizer's pair template.
  engine::YesNoTemplate yes_no_template_;
  std::string openapi_document_;  // GET /openapi.json: openapi.json with the model's id filled in
  bool reranker_ = false;  // a classification head: /rerank with one label, /predict with any
  engine::ops::PoolingMode pooling_ = engine::ops::PoolingMode::kCls;  // --pooling, else the model's
  bool splade_ = false;    // SPLADE pooling (a …ForMaskedLM model): /embed_sparse
  // A bge-m3 folder (config_.bge_m3): /embed_multi, and its sparse and ColBERT outputs on
  // /embed_sparse and /v1/multi-vector; the ids its lexical weights drop.
  bool bge_m3_ = false;
  std::vector<int32_t> bge_m3_dropped_ids_;
  // A multi-vector (ColBERT) model: its query and document rules (/v1/multi-vector, MaxSim rerank).
  std::optional<MultiVectorInputs> multi_vector_;
  ModelKind kind_ = ModelKind::kEmbedding;
  int64_t created_ = 0;  // when the gateway started, seconds since the Unix epoch (/v1/models)
  std::vector<const Gateway*> served_;  // every model of this server, this one included
  // What the first worker to answer runs on (dtype, backend, CPU path), for /info: asked at
  // start, and again by /info (at most once a second) while no worker has answered, so a gateway
  // started before its workers tells the truth once one is up (issue 45, item 12).
  std::optional<v1::InfoResponse> WorkerInfo() const;
  mutable std::mutex worker_info_mutex_;
  mutable std::optional<v1::InfoResponse> worker_info_;
  mutable std::chrono::steady_clock::time_point worker_info_asked_{};
  engine::ModelProfile profile_;  // the gateway's own, which a worker's must match

  // One per pool thread, all over the same loaded tokenizer (ShareWithNewScratch).
  std::vector<std::unique_ptr<engine::ModelTokenizer>> tokenizers_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<TaskPool> pool_;
  std::unique_ptr<RouteTable> routes_;
  std::unique_ptr<http::Server> http_;

  std::atomic<int64_t> in_flight_{0};
  std::mutex counters_mutex_;
  std::map<std::pair<std::string, int>, metrics::Counter*> responses_;
  metrics::Histogram* request_seconds_ = nullptr;
  metrics::Histogram* tokenization_seconds_ = nullptr;
  metrics::Counter* tokens_total_ = nullptr;
  metrics::Counter* client_disconnects_ = nullptr;
  bool shut_down_ = false;
};

// The models' names, each quoted, comma-separated (what an unknown model's 404 lists).
std::string ServedModelNames(const std::vector<const Gateway*>& models);

}  // namespace stamen::gateway
