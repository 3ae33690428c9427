// The names of a request's priorities as the HTTP API, the command line and the benchmarks
// write them ("high", "normal", "low"), in both directions.
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

}  // namespace stamen::server
