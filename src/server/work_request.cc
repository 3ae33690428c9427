// Where each sequence's output rows and spans start, and the names of the priorities as the
// HTTP API, the command line and the benchmarks write them ("high", "normal", "low").
#include "server/work_request.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace stamen::server {

const char* PriorityName(Priority priority) {
  switch (priority) {
    case Priority::kHigh: return "high";
    case Priority::kNormal: return "normal";
    case Priority::kLow: return "low";
  }
  return "normal";
}

std::optional<Priority> ParsePriority(std::string_view name) {
  for (const Priority priority : {Priority::kHigh, Priority::kNormal, Priority::kLow}) {
    if (name == PriorityName(priority)) return priority;
  }
  return std::nullopt;
}

namespace {

// 0, then the running sum of count(sequence) over the request's sequences.
template <typename Count>
std::vector<int64_t> SequenceOffsets(const WorkRequest& request, Count count) {
  std::vector<int64_t> offsets(1, 0);
  offsets.reserve(request.lengths.size() + 1);
  for (size_t sequence = 0; sequence < request.lengths.size(); ++sequence) {
    offsets.push_back(offsets.back() + count(sequence));
  }
  return offsets;
}

}  // namespace

int64_t WorkRequest::RowsOf(size_t sequence, int64_t first_token) const {
  switch (kind) {
    case WorkKind::kTokenEmbed:
    case WorkKind::kDenseSparseColbert: return lengths[sequence];
    case WorkKind::kMaxSim: return sequence == 0 ? 0 : 1;
    case WorkKind::kTokenVectors: {
      int64_t kept = 0;
      for (int64_t token = first_token; token < first_token + lengths[sequence]; ++token) kept += KeepsToken(sequence, token);
      return kept;
    }
    case WorkKind::kEmbed:
    case WorkKind::kScore: break;
  }
  return span_counts.empty() ? 1 : span_counts[sequence];
}

bool WorkRequest::KeepsToken(size_t sequence, int64_t token) const {
  if (skip_token_ids.empty() || (kind == WorkKind::kMaxSim && sequence == 0)) return true;
  int32_t id;
  std::memcpy(&id, token_ids.data() + token * sizeof(int32_t), sizeof(id));
  return std::find(skip_token_ids.begin(), skip_token_ids.end(), id) == skip_token_ids.end();
}

std::vector<int64_t> RowOffsets(const WorkRequest& request) {
  int64_t first_token = 0;
  return SequenceOffsets(request, [&](size_t sequence) {
    const int64_t rows = request.RowsOf(sequence, first_token);
    first_token += request.lengths[sequence];
    return rows;
  });
}

std::vector<int64_t> SpanOffsets(const WorkRequest& request) {
  return SequenceOffsets(request, [&](size_t sequence) -> int64_t {
    return request.span_counts.empty() ? 0 : request.span_counts[sequence];
  });
}

std::shared_ptr<WorkRequest> CopySequences(const WorkRequest& source, size_t first, size_t end) {
  auto copy = std::make_shared<WorkRequest>();
  copy->kind = source.kind;
  copy->pooling = source.pooling;
  copy->normalize = source.normalize;
  copy->dimensions = source.dimensions;
  copy->deadline = source.deadline;
  copy->priority = source.priority;
  const auto lengths = source.lengths.begin();
  copy->lengths.assign(lengths + first, lengths + end);
  const size_t first_byte = std::accumulate(lengths, lengths + first, size_t{0}) * sizeof(int32_t);
  const size_t bytes = std::accumulate(lengths + first, lengths + end, size_t{0}) * sizeof(int32_t);
  copy->token_ids = source.token_ids.substr(first_byte, bytes);
  if (!source.token_type_ids.empty()) copy->token_type_ids = source.token_type_ids.substr(first_byte, bytes);
  if (!source.span_counts.empty()) {
    const auto counts = source.span_counts.begin();
    copy->span_counts.assign(counts + first, counts + end);
    const size_t first_span = std::accumulate(counts, counts + first, size_t{0});
    const size_t spans = std::accumulate(counts + first, counts + end, size_t{0});
    copy->spans.assign(source.spans.begin() + 2 * first_span, source.spans.begin() + 2 * (first_span + spans));
  }
  if (!source.key_lengths.empty()) {
    copy->key_lengths.assign(source.key_lengths.begin() + first, source.key_lengths.begin() + end);
  }
  copy->skip_token_ids = source.skip_token_ids;
  copy->adapter = source.adapter;
  return copy;
}

}  // namespace stamen::server
