// One request's sequences as the scheduler sees them, whichever transport brought them (gRPC
// from a gateway in another process, or a function call from the gateway in `stamen serve`),
// and the results the scheduler writes back.
#pragma once

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model_folder/kinds.h"

namespace stamen::server {

// Token ids and vectors travel as little-endian bytes and are read in place.
static_assert(std::endian::native == std::endian::little, "stamen's wire format assumes a little-endian host");

using Clock = std::chrono::steady_clock;

enum class WorkKind {
  kEmbed,        // one pooled vector per sequence (or per span of it: late chunking, `spans`)
  kScore,        // the classification head's logits per sequence
  kTokenEmbed,   // every token's last hidden state, neither pooled nor normalised (TEI's /embed_all)
  // A multi-vector (ColBERT) model's L2-normalised token vectors, those of the tokens whose ids
  // are in skip_token_ids left out (a document's skiplist): one row per token kept.
  kTokenVectors,
  // MaxSim (late interaction): sequence 0 is a query, every other sequence a document; each
  // document gives one row of one value, Σ over the query's vectors of the largest dot product
  // with the document's kept vectors (PyLate's colbert_scores). Sequence 0 gives no row.
  kMaxSim,
  // bge-m3's three outputs from one forward (engine::StepOutput::kDenseSparseColbert): one row per
  // token of hidden size + 1 columns laid out as engine::BgeM3RowLayout says, neither pooled nor
  // normalised further; the gateway reads the dense, sparse and ColBERT outputs from them.
  kDenseSparseColbert,
};

// Which requests' sequences join the next batch first (the scheduler's cut, scheduler.h).
enum class Priority : uint8_t { kHigh = 0, kNormal = 1, kLow = 2 };
constexpr int kPriorities = 3;
const char* PriorityName(Priority priority);  // "high", "normal", "low"
// The inverse of PriorityName; nullopt for any other text (an empty one included).
std::optional<Priority> ParsePriority(std::string_view name);

struct WorkTiming {
  uint64_t queue_microseconds = 0;
  uint64_t compute_microseconds = 0;
  uint32_t batches = 0;
};

struct WorkRequest {
  // --- set by the submitter, read-only once submitted ---
  WorkKind kind = WorkKind::kEmbed;
  std::optional<engine::ops::PoolingMode> pooling;  // unset: the model's default
  bool normalize = true;                           // embeddings: L2-normalise after `dimensions`
  int64_t dimensions = 0;                          // embeddings: leading dimensions kept; 0 = all
  std::string token_ids;                           // int32 little-endian, sequences end to end
  std::vector<int32_t> lengths;                    // tokens per sequence
  std::string token_type_ids;                      // int32 little-endian per token, or empty
  // Late chunking (kEmbed only; empty: one vector per sequence). Sequence s gives
  // span_counts[s] vectors, each pooled (and normalised) over the tokens [begin, end) of that
  // sequence alone; `spans` holds their begin, end pairs, token indices within their sequence,
  // sequence 0's spans first. The model runs over the whole sequence once, so every span's
  // vector carries the context of the whole sequence.
  std::vector<int32_t> span_counts;
  std::vector<int32_t> spans;
  // kTokenVectors and kMaxSim: the keys each sequence's tokens attend to, its leading ones (a
  // query's unattended expansion tokens; engine::Batch::key_lengths), 0 for all; empty: all.
  std::vector<int32_t> key_lengths;
  // kTokenVectors: the token ids whose vectors are dropped (kMaxSim: from the documents only).
  std::vector<int32_t> skip_token_ids;
  // The task adapter every sequence runs with (jina-embeddings-v3's LoRA per task): an index into
  // the model's adapter tasks (engine::ModelConfig::adapter_tasks), −1 for none (the base weights).
  int32_t adapter = -1;
  Clock::time_point deadline = Clock::time_point::max();
  Priority priority = Priority::kNormal;
  // Called exactly once, from the scheduler's thread, when every sequence has its result or
  // the request failed, was cancelled or expired (then `status` says which). Must not block.
  std::function<void(WorkRequest&)> on_done;

  // --- written by the scheduler, valid in on_done ---
  Status status;
  // float32 little-endian, rows × columns in sequence order: one row per sequence, per span
  // (late chunking) or per token (kTokenEmbed); RowOffsets says which rows are whose.
  std::string output;
  int64_t columns = 0;  // floats per row
  WorkTiming timing;

  // Thread-safe; the scheduler drops the request's queued sequences at its next turn (wake it
  // with Scheduler::Cancel).
  std::atomic<bool> cancelled{false};

  int64_t total_tokens() const { return static_cast<int64_t>(token_ids.size() / sizeof(int32_t)); }
  // The output rows sequence s gives: 1, its span count, its length (kTokenEmbed,
  // kDenseSparseColbert), its tokens
  // kept (kTokenVectors: `first_token` is its first token's index), none for kMaxSim's query.
  int64_t RowsOf(size_t sequence, int64_t first_token) const;
  // Whether the vector of token `token` (an index into token_ids) of sequence `sequence` is kept.
  bool KeepsToken(size_t sequence, int64_t token) const;

  // --- the scheduler's bookkeeping ---
  std::vector<int64_t> token_offsets;  // first token of each sequence, plus the end
  std::vector<int64_t> row_offsets;    // first output row of each sequence, plus the end (RowOffsets)
  std::vector<int64_t> span_offsets;   // first span (pair of `spans`) of each sequence, plus the end
  std::vector<float> query_vectors;    // kMaxSim: sequence 0's vectors once computed, row after row
  size_t next_sequence = 0;            // first sequence not yet put in a batch
  size_t sequences_done = 0;           // sequences whose results are written
  int batches_in_flight = 0;
  Clock::time_point submitted;
  bool finished = false;
};

// S + 1 offsets: the first output row of each sequence (RowsOf), then the total.
std::vector<int64_t> RowOffsets(const WorkRequest& request);
// S + 1 offsets: the first span of each sequence, then the span total (all 0 without spans).
std::vector<int64_t> SpanOffsets(const WorkRequest& request);

// A new request with `source`'s options (kind, pooling, normalize, dimensions, deadline,
// priority) and its sequences [first, end): their token ids, lengths, type ids and spans. None
// of the scheduler's bookkeeping or results: a chunk of a larger request, or all of it for a
// retry, which must not inherit the first attempt's. The one place the submitter's fields are
// listed (the gRPC messages carry them in request_validation.h).
std::shared_ptr<WorkRequest> CopySequences(const WorkRequest& source, size_t first, size_t end);

}  // namespace stamen::server
