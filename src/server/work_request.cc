// Where each sequence's output rows and spans start, and the names of the priorities as the
// HTTP API, the command line and the benchmarks write them ("high", "normal", "low").
#include "server/work_request.h"

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

std::vector<int64_t> RowOffsets(const WorkRequest& request) {
  return SequenceOffsets(request, [&](size_t sequence) { return request.RowsOf(sequence); });
}

std::vector<int64_t> SpanOffsets(const WorkRequest& request) {
  return SequenceOffsets(request, [&](size_t sequence) -> int64_t {
    return request.span_counts.empty() ? 0 : request.span_counts[sequence];
  });
}

}  // namespace stamen::server
