// The load loop shared by the serving benchmarks: N client threads sending requests until a
// count or a duration is reached, per-request latencies, percentiles, a progress bar on
// stderr (only when it is a terminal), and the small JSON writer their reports use.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace stamen::bench {

struct LoadOptions {
  std::string label;      // shown by the progress bar
  int clients = 1;        // threads, each sending its next request when the previous answer is in
  int64_t requests = 10;  // in all, over every client (when duration_s is 0)
  double duration_s = 0;  // > 0: send until this much time has passed instead
};

struct LoadResult {
  std::vector<double> milliseconds;  // one per request, in completion order
  double wall_s = 0;                 // first request sent → last answer read
};

// `send(client, index)` sends request number `index` on client `client`'s connection and
// returns when its answer is read. The first error stops the run and is returned.
StatusOr<LoadResult> RunLoad(const LoadOptions& options, const std::function<Status(int, int64_t)>& send);

struct Percentiles {
  int64_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
// Nearest-rank percentiles.
Percentiles Summarize(std::vector<double> values);

// The machine as reports name it: CPU model, cores, and the 1-minute load average now.
std::string CpuModel();
int CpuCount();
double LoadAverage();
std::string UtcNow();

// Minimal JSON building: values are appended as already-formatted JSON text.
class Json {
 public:
  Json& Add(const std::string& key, const std::string& value);  // a string
  Json& Add(const std::string& key, const char* value) { return Add(key, std::string(value)); }
  Json& Add(const std::string& key, double value);
  Json& Add(const std::string& key, int64_t value);
  Json& Add(const std::string& key, int value) { return Add(key, static_cast<int64_t>(value)); }
  Json& Add(const std::string& key, bool value);
  Json& AddRaw(const std::string& key, const std::string& json);  // an object or array made elsewhere
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};
std::string JsonQuote(const std::string& text);
std::string JsonArray(const std::vector<std::string>& items);

}  // namespace stamen::bench
