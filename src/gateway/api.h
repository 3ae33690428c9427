// The HTTP API's request bodies and response bodies (shapes in ../shared/docs/api.md):
// parsing with simdjson into plain structs, with the 4xx error each malformed body earns,
// and writing JSON with std::to_chars. No I/O here: the fuzz target and tests call it directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/finished_rows.h"
#include "gateway/quantize.h"
#include "server/work_request.h"

namespace stamen::gateway {

// An HTTP error answer: its status, message and class (`type`: invalid_request_error,
// overloaded, unavailable, server_error, timeout, cancelled, not_found, authentication_error). Each API family writes it in its own shape (ErrorBody).
struct ApiError {
  int status = 400;
  std::string message;
  // OpenAI's error type; "model_not_found" is written as OpenAI writes it: an
  // invalid_request_error whose code is model_not_found (other codes are the status).
  std::string type = "invalid_request_error";
  // An empty batch: TEI answers it with its own error_type "Empty" (400), the others as any
  // invalid request.
  bool empty_batch = false;
};

// 404 for a model this server does not serve (`served`: the names it does, quoted), in
// OpenAI's shape: invalid_request_error, code model_not_found.
ApiError UnknownModel(std::string_view model, std::string_view served);

// Which API a route belongs to, and so the shape its clients parse errors in:
//   OpenAI  {"error": {"message", "type", "param", "code"}}
//   TEI     {"error": "…", "error_type": "Validation|Tokenizer|Overloaded|Backend|Unhealthy|Empty"}
//   Cohere  {"message": "…"}
enum class ApiFamily { kOpenAI, kTei, kCohere };

// The one place that knows each family's error shape and status codes: TEI answers a failed
// inference with 424 (its "backend" error), where the others answer 500.
int ErrorStatus(const ApiError& error, ApiFamily family);
std::string ErrorBody(const ApiError& error, ApiFamily family = ApiFamily::kOpenAI);

// One input: a text or token ids given by the client.
using Input = std::variant<std::string, std::vector<int32_t>>;

enum class Truncation { kRight, kLeft };

// A chunk of an input text for late chunking: bytes [start, end) of it, the offsets /tokenize
// reports.
struct TextSpan {
  int64_t start = 0;
  int64_t end = 0;
};

// Late chunking by a rule ("chunking"): "sentences", or {"tokens": N, "overlap": M}, runs of N
// of the text's tokens, each starting N − M after the previous one.
struct ChunkingRule {
  bool sentences = false;
  int64_t tokens = 0;
  int64_t overlap = 0;
};

// POST /v1/embeddings (OpenAI), POST /embed (TEI): what both say, in one shape.
struct EmbedCall {
  std::vector<Input> inputs;
  // OpenAI "encoding_format", TEI "embedding_type": float, base64 (OpenAI only: float32
  // bytes), int8, uint8, binary, ubinary (quantize.h).
  EmbeddingType encoding = EmbeddingType::kFloat;
  int64_t dimensions = 0;              // 0: all
  bool normalize = true;               // TEI only; OpenAI always normalises
  std::optional<bool> truncate;        // unset: the server's --auto-truncate
  Truncation truncation_direction = Truncation::kRight;
  std::string prompt_name;             // TEI: a prompt of the model's sentence-transformers config
  std::string model;                   // OpenAI: echoed back
  std::optional<server::Priority> priority;  // "priority": unset, the server's rule (--bulk-threshold)
  // Late chunking ("chunks"): each input's chunks, one vector each; empty: one vector per
  // input. A single input may give its list alone ([[start, end], …]).
  std::vector<std::vector<TextSpan>> chunks;
  std::optional<ChunkingRule> chunking;  // instead of "chunks": the gateway cuts the chunks
  // Jina's "task": the task adapter every input runs with (jina-embeddings-v3; task_adapter.h).
  std::string task;
};
// `openai` picks the OpenAI shape ({input, …}); otherwise TEI's ({inputs, …}).
std::variant<EmbedCall, ApiError> ParseEmbedCall(std::string_view body, bool openai);

// POST /embed_multi (bge-m3's three outputs from one forward): {"inputs" (as /embed's), "dense",
// "sparse", "colbert" (booleans: the outputs wanted; none named: dense alone), "truncate",
// "truncation_direction", "prompt_name", "priority"}. Asking for no output is an error.
struct EmbedMultiCall {
  std::vector<Input> inputs;
  bool dense = true;
  bool sparse = false;
  bool colbert = false;
  std::optional<bool> truncate;
  Truncation truncation_direction = Truncation::kRight;
  std::string prompt_name;
  std::optional<server::Priority> priority;
};
std::variant<EmbedMultiCall, ApiError> ParseEmbedMultiCall(std::string_view body);

// POST /rerank (TEI) and POST /v1/rerank (Cohere / Jina).
struct RerankCall {
  std::string query;
  std::vector<std::string> documents;
  std::optional<bool> truncate;
  Truncation truncation_direction = Truncation::kRight;
  bool raw_scores = false;        // TEI: logits instead of sigmoid scores
  bool return_documents = false;  // TEI return_text / Cohere return_documents
  std::optional<int64_t> top_n;   // keep the best n (Cohere; TEI /rerank too, stamen's own)
  std::optional<int64_t> max_tokens_per_document;  // Cohere v2 max_tokens_per_doc: documents cut to this many tokens
  std::string model;
  std::optional<server::Priority> priority;
};
std::variant<RerankCall, ApiError> ParseRerankCall(std::string_view body, bool cohere);
// Which API's rerank answer: TEI's [{index, score}], Cohere v1's {model, results, usage},
// Cohere v2's {id, results, meta}.
enum class RerankShape { kTei, kCohereV1, kCohereV2 };

// POST /tokenize (TEI).
struct TokenizeCall {
  std::vector<std::string> inputs;
  bool add_special_tokens = true;
  std::string prompt_name;
};
std::variant<TokenizeCall, ApiError> ParseTokenizeCall(std::string_view body);

// GET /v1/models/{id}: {"id", "object": "model", "created", "owned_by"}; GET /v1/models: the
// list of them, {"object": "list", "data": […]}. `created`: seconds since the Unix epoch.
void AppendModelObject(std::string& out, std::string_view id, int64_t created);

// --- writing ---
void AppendFloat(std::string& out, float value);
void AppendJsonString(std::string& out, std::string_view text);
// Base64 (RFC 4648, padded) of raw bytes.
std::string Base64(std::string_view bytes);
// One embedding of `columns` floats as `type` answers it: a JSON array of floats, a base64
// string of its float32 bytes, or a JSON array of integers (QuantizeRow over `ranges`).
void AppendEmbedding(std::string& out, const float* row, size_t columns, EmbeddingType type,
                     const QuantizationRanges& ranges);

// Late chunking's vectors, input by input, chunk by chunk: rows[i][k] of `values` (`columns`
// floats each) is input i's chunk k. TEI's shape writes one array of chunk vectors per input,
// comma-separated ([v, …], [v, …]), or with `with_spans` (chunks a rule cut) of objects
// {"chunk": [start, end], "embedding": v}; OpenAI's one data item per chunk ({"object":
// "embedding", "index": n, "input_index": i, "chunk": [start, end], "embedding": v}, n counting
// all chunks).
void AppendChunkVectors(std::string& out, const std::vector<std::vector<TextSpan>>& chunks,
                        const std::vector<std::vector<int64_t>>& rows, const float* values, size_t columns,
                        EmbeddingType type, const QuantizationRanges& ranges, bool openai, bool with_spans);

// A random version 4 UUID, the "id" Cohere puts on every answer (/v2/embed, /v2/rerank).
std::string NewRequestId();
// ,"meta":{"api_version":{"version":"2"},"billed_units":{…},"tokens":{"input_tokens":N}}
// with `billed` the billed_units' members ("input_tokens":N or "search_units":N).
void AppendCohereMeta(std::string& out, const std::string& billed, size_t input_tokens);

// Late chunking's plan for an answer: chunks[i] are input i's chunks (the call's, or those its
// rule cut), rows[i][k] the output row of its chunk k. Empty: one vector per input.
struct LateChunks {
  std::vector<std::vector<TextSpan>> chunks;
  std::vector<std::vector<int64_t>> rows;
};
// POST /v1/embeddings' answer when `openai` ({"object": "list", "data": [{"object": "embedding",
// "index", "embedding"}], "model", "usage"}, the model named `call.model`, else `model_id`), else
// TEI's /embed answer ([v, …]): one vector per input, each a row of `done`, or late chunking's.
std::string EmbeddingsBody(const EmbedCall& call, bool openai, std::string_view model_id, const FinishedRows& done,
                           const LateChunks& late);

// A reranker's score of each input: its logit (the first of its row), as a sigmoid unless
// `raw_scores`.
std::vector<double> RerankScores(const FinishedRows& done, bool raw_scores);
// A MaxSim job's score of each document (inputs after the query): the one float of its row,
// PyLate's colbert_scores as they are (a sum of cosines, no sigmoid).
std::vector<double> MaxSimScores(const FinishedRows& done);
// The rerank answer in `shape` with the documents ordered by their `scores`, best first (top_n of
// them; ties in the documents' order); Cohere v1's names the model the call named, else `model_id`.
std::string RerankBody(const RerankCall& call, RerankShape shape, std::string_view model_id,
                       const std::vector<double>& scores, size_t total_tokens);

}  // namespace stamen::gateway
