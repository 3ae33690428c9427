#include "bench/serve_load.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <mutex>
#include <numeric>
#include <thread>

namespace stamen::bench {

using Clock = std::chrono::steady_clock;

StatusOr<LoadResult> RunLoad(const LoadOptions& options, const std::function<Status(int, int64_t)>& send) {
  const int clients = std::max(1, options.clients);
  const bool timed = options.duration_s > 0;
  const int64_t total = timed ? INT64_MAX : std::max<int64_t>(1, options.requests);
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  Status failure;
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.duration_s));

  std::vector<std::thread> threads;
  for (int client = 0; client < clients; ++client) {
    threads.emplace_back([&, client] {
      for (;;) {
        if (stop.load() || (timed && Clock::now() >= deadline)) return;
        const int64_t index = next.fetch_add(1);
        if (index >= total) return;
        const auto sent = Clock::now();
        const Status status = send(client, index);
        const auto answered = Clock::now();
        if (!status.ok()) {
          std::lock_guard lock(mutex);
          if (failure.ok()) failure = status;
          stop = true;
          return;
        }
        latencies[static_cast<size_t>(client)].push_back(
            std::chrono::duration<double, std::milli>(answered - sent).count());
        ++done;
      }
    });
  }

  // Progress bar: stderr only, only on a terminal.
  std::thread progress;
  std::atomic<bool> finished{false};
  std::condition_variable wake;
  std::mutex wake_mutex;
  if (::isatty(STDERR_FILENO) == 1) {
    progress = std::thread([&] {
      std::unique_lock lock(wake_mutex);
      while (!finished.load()) {
        wake.wait_for(lock, std::chrono::milliseconds(250));
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        const double fraction =
            timed ? std::min(1.0, elapsed / options.duration_s) : static_cast<double>(done.load()) / static_cast<double>(total);
        const int width = 30;
        const int filled = static_cast<int>(fraction * width);
        std::fprintf(stderr, "\r%-28s [%s%s] %3d%% %lld req %.1f s", options.label.substr(0, 28).c_str(),
                     std::string(static_cast<size_t>(filled), '#').c_str(),
                     std::string(static_cast<size_t>(width - filled), '.').c_str(), static_cast<int>(fraction * 100),
                     static_cast<long long>(done.load()), elapsed);
        std::fflush(stderr);
      }
      std::fprintf(stderr, "\r%*s\r", 80, "");
      std::fflush(stderr);
    });
  }
  for (auto& thread : threads) thread.join();
  const auto end = Clock::now();
  {
    std::lock_guard lock(wake_mutex);
    finished = true;
  }
  wake.notify_all();
  if (progress.joinable()) progress.join();
  if (!failure.ok()) return failure;

  LoadResult result;
  result.wall_s = std::chrono::duration<double>(end - start).count();
  for (auto& values : latencies) result.milliseconds.insert(result.milliseconds.end(), values.begin(), values.end());
  if (result.milliseconds.empty()) return Status::Error("no request completed (duration too short?)");
  return result;
}

Percentiles Summarize(std::vector<double> values) {
  Percentiles out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  auto rank = [&](double fraction) {
    const size_t index = static_cast<size_t>(std::ceil(fraction * static_cast<double>(values.size())));
    return values[std::min(values.size() - 1, index == 0 ? 0 : index - 1)];
  };
  out.count = static_cast<int64_t>(values.size());
  out.p50 = rank(0.50);
  out.p90 = rank(0.90);
  out.p99 = rank(0.99);
  out.max = values.back();
  out.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  return out;
}

std::string CpuModel() {
  std::ifstream file("/proc/cpuinfo");
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

int CpuCount() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

double LoadAverage() {
  std::ifstream file("/proc/loadavg");
  double load = -1;
  file >> load;
  return load;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string JsonQuote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]";
}

Json& Json::AddRaw(const std::string& key, const std::string& json) {
  if (!body_.empty()) body_ += ',';
  body_ += JsonQuote(key) + ":" + json;
  return *this;
}
Json& Json::Add(const std::string& key, const std::string& value) { return AddRaw(key, JsonQuote(value)); }
Json& Json::Add(const std::string& key, double value) {
  if (!std::isfinite(value)) return AddRaw(key, "null");
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return AddRaw(key, text);
}
Json& Json::Add(const std::string& key, int64_t value) { return AddRaw(key, std::to_string(value)); }
Json& Json::Add(const std::string& key, bool value) { return AddRaw(key, value ? "true" : "false"); }

}  // namespace stamen::bench
