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

std::vector<int64_t> RowOffsets(const WorkRequest& request) {
  std::vector<int64_t> offsets(1, 0);
  offsets.reserve(request.lengths.size() + 1);
  for (size_t sequence = 0; sequence < request.lengths.size(); ++sequence) {
    offsets.push_back(offsets.back() + request.RowsOf(sequence));
  }
  return offsets;
}

std::vector<int64_t> SpanOffsets(const WorkRequest& request) {
  std::vector<int64_t> offsets(1, 0);
  offsets.reserve(request.lengths.size() + 1);
  for (size_t sequence = 0; sequence < request.lengths.size(); ++sequence) {
    offsets.push_back(offsets.back() + (request.span_counts.empty() ? 0 : request.span_counts[sequence]));
  }
  return offsets;
}

}  // namespace stamen::server
