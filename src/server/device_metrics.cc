#include "server/device_metrics.h"

namespace stamen::server {

DeviceMetrics::DeviceMetrics(metrics::Registry& registry)
    : graph_captures_(registry.AddGauge("stamen_device_graph_captures", "CUDA graphs captured since the engine loaded")),
      graph_replays_(registry.AddGauge("stamen_device_graph_replays", "Steps run by replaying a captured CUDA graph")),
      eager_runs_(registry.AddGauge("stamen_device_eager_runs", "Steps run kernel by kernel, without a graph")),
      capture_failures_(registry.AddGauge("stamen_device_graph_capture_failures", "Graph captures that failed")),
      capture_milliseconds_(registry.AddGauge("stamen_device_graph_capture_milliseconds",
                                              "Time spent capturing and instantiating graphs, in all")),
      graphs_(registry.AddGauge("stamen_device_graphs", "CUDA graphs held now")),
      graph_evictions_(registry.AddGauge("stamen_device_graph_evictions", "Graphs dropped to stay under the memory cap")),
      graph_bytes_(registry.AddGauge("stamen_device_graph_bytes", "Device memory held by graphs and their inputs")),
      graph_token_limit_(registry.AddGauge("stamen_device_graph_token_limit",
                                           "Largest batch, in tokens, that runs as a graph (above: eager)")),
      memory_used_bytes_(registry.AddGauge("stamen_device_memory_used_bytes",
                                           "Device memory in use on the whole GPU, as nvidia-smi counts it")) {}

void DeviceMetrics::Publish(const engine::DeviceStats& stats) {
  graph_captures_.Set(stats.graph_captures);
  graph_replays_.Set(stats.graph_replays);
  eager_runs_.Set(stats.eager_runs);
  capture_failures_.Set(stats.capture_failures);
  capture_milliseconds_.Set(static_cast<int64_t>(stats.capture_seconds * 1e3));
  graphs_.Set(stats.graphs);
  graph_evictions_.Set(stats.graph_evictions);
  graph_bytes_.Set(static_cast<int64_t>(stats.graph_bytes));
  graph_token_limit_.Set(stats.inflection_tokens);
  memory_used_bytes_.Set(static_cast<int64_t>(stats.memory_used_bytes));
}

}  // namespace stamen::server
