// Prometheus metrics: counters, gauges and histograms that hot paths update with a few atomic
// operations, and a registry that renders them in the Prometheus text format (version 0.0.4)
// for a /metrics route.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace stamen::metrics {

class Counter {
 public:
  void Increment(uint64_t amount = 1) { value_.fetch_add(amount, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(int64_t value) { value_.store(value, std::memory_order_relaxed); }
  void Add(int64_t amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Cumulative buckets as Prometheus expects: bucket i counts observations ≤ upper_bounds[i].
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  const std::vector<double>& upper_bounds() const { return upper_bounds_; }
  // Observations ≤ upper_bounds()[bucket] (not cumulative).
  uint64_t bucket_count(size_t bucket) const { return buckets_[bucket].load(std::memory_order_relaxed); }

 private:
  std::vector<double> upper_bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // one per bound, plus +Inf
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0.0};
};

// Bounds growing by `factor` from `start`: {start, start·factor, …} (`count` of them).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// Owns the metrics of one process. Registration happens at start-up (it locks); updates are
// lock-free; Render may run at any time.
class Registry {
 public:
  Registry() = default;
  // A view of `parent` that adds `labels` (e.g. `model="minilm"`) to every metric registered
  // through it, so that the same component run once per model keeps its series apart; it
  // renders the parent's whole registry. `parent` must outlive it.
  Registry(Registry& parent, std::string labels) : parent_(&parent), scope_labels_(std::move(labels)) {}
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // `labels` is the Prometheus label set without braces, e.g. `status="ok"`; metrics of one
  // name share `help` and differ by labels.
  Counter& AddCounter(const std::string& name, const std::string& help, const std::string& labels = "");
  Gauge& AddGauge(const std::string& name, const std::string& help, const std::string& labels = "");
  Histogram& AddHistogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds,
                          const std::string& labels = "");
  std::string Render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Entry {
    std::string name, help, labels;
    Type type;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  Entry& Add(const std::string& name, const std::string& help, const std::string& labels, Type type);

  Registry* parent_ = nullptr;
  std::string scope_labels_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace stamen::metrics
