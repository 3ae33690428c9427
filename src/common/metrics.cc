#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace stamen::metrics {

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), buckets_(new std::atomic<uint64_t>[upper_bounds_.size() + 1]) {
  std::sort(upper_bounds_.begin(), upper_bounds_.end());
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  const size_t bucket = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  double sum = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(sum, sum + value, std::memory_order_relaxed)) {
  }
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> bounds;
  for (int i = 0; i < count; ++i) bounds.push_back(start * std::pow(factor, i));
  return bounds;
}

Registry::Entry& Registry::Add(const std::string& name, const std::string& help, const std::string& labels,
                               Type type) {
  if (parent_ != nullptr) {
    const std::string all = scope_labels_.empty() ? labels : labels.empty() ? scope_labels_ : scope_labels_ + "," + labels;
    return parent_->Add(name, help, all, type);
  }
  std::lock_guard lock(mutex_);
  entries_.push_back(std::make_unique<Entry>());
  Entry& entry = *entries_.back();
  entry.name = name;
  entry.help = help;
  entry.labels = labels;
  entry.type = type;
  return entry;
}

Counter& Registry::AddCounter(const std::string& name, const std::string& help, const std::string& labels) {
  Entry& entry = Add(name, help, labels, Type::kCounter);
  entry.counter = std::make_unique<Counter>();
  return *entry.counter;
}

Gauge& Registry::AddGauge(const std::string& name, const std::string& help, const std::string& labels) {
  Entry& entry = Add(name, help, labels, Type::kGauge);
  entry.gauge = std::make_unique<Gauge>();
  return *entry.gauge;
}

Histogram& Registry::AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> upper_bounds, const std::string& labels) {
  Entry& entry = Add(name, help, labels, Type::kHistogram);
  entry.histogram = std::make_unique<Histogram>(std::move(upper_bounds));
  return *entry.histogram;
}

namespace {

void AppendNumber(std::string& out, double value) {
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

// `name{labels,extra} value`
void AppendSample(std::string& out, const std::string& name, const std::string& labels, const std::string& extra,
                  double value) {
  out += name;
  if (!labels.empty() || !extra.empty()) {
    out += '{';
    out += labels;
    if (!labels.empty() && !extra.empty()) out += ',';
    out += extra;
    out += '}';
  }
  out += ' ';
  AppendNumber(out, value);
  out += '\n';
}

}  // namespace

std::string Registry::Render() const {
  if (parent_ != nullptr) return parent_->Render();
  std::lock_guard lock(mutex_);
  std::string out;
  std::vector<std::string> described;
  for (const auto& entry : entries_) {
    if (std::find(described.begin(), described.end(), entry->name) == described.end()) {
      described.push_back(entry->name);
      static constexpr const char* kTypeNames[] = {"counter", "gauge", "histogram"};
      out += "# HELP " + entry->name + " " + entry->help + "\n";
      out += "# TYPE " + entry->name + " " + kTypeNames[static_cast<int>(entry->type)] + "\n";
      // Samples of one name stay together, as the format requires.
      for (const auto& same : entries_) {
        if (same->name != entry->name) continue;
        switch (same->type) {
          case Type::kCounter:
            AppendSample(out, same->name, same->labels, "", static_cast<double>(same->counter->value()));
            break;
          case Type::kGauge:
            AppendSample(out, same->name, same->labels, "", static_cast<double>(same->gauge->value()));
            break;
          case Type::kHistogram: {
            const Histogram& histogram = *same->histogram;
            uint64_t cumulative = 0;
            for (size_t i = 0; i <= histogram.upper_bounds().size(); ++i) {
              cumulative += histogram.bucket_count(i);
              std::string bound = "le=\"";
              AppendNumber(bound, i < histogram.upper_bounds().size() ? histogram.upper_bounds()[i] : INFINITY);
              bound += '"';
              AppendSample(out, same->name + "_bucket", same->labels, bound, static_cast<double>(cumulative));
            }
            AppendSample(out, same->name + "_sum", same->labels, "", histogram.sum());
            AppendSample(out, same->name + "_count", same->labels, "", static_cast<double>(histogram.count()));
            break;
          }
        }
      }
    }
  }
  return out;
}

}  // namespace stamen::metrics
