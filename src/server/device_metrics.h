// The GPU path's Prometheus metrics: CUDA graph captures, replays and eager runs, capture time,
// graphs held and their memory, and device memory in use, from Engine::device_stats() after
// each step. Registered only for a worker whose engine runs on a GPU.
#pragma once

#include "common/metrics.h"
#include "engine/engine.h"

namespace stamen::server {

class DeviceMetrics {
 public:
  explicit DeviceMetrics(metrics::Registry& registry);
  // The engine's counters are totals since it loaded: the gauges take them as they are.
  void Publish(const engine::DeviceStats& stats);

 private:
  metrics::Gauge& graph_captures_;
  metrics::Gauge& graph_replays_;
  metrics::Gauge& eager_runs_;
  metrics::Gauge& capture_failures_;
  metrics::Gauge& capture_milliseconds_;
  metrics::Gauge& graphs_;
  metrics::Gauge& graph_evictions_;
  metrics::Gauge& graph_bytes_;
  metrics::Gauge& graph_token_limit_;
  metrics::Gauge& memory_used_bytes_;
};

}  // namespace stamen::server
