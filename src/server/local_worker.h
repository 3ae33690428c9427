// A worker without a network: the engine of one model folder behind a scheduler, with its
// metrics. `stamen worker` puts it behind gRPC; `stamen serve` hands it requests from the
// gateway in the same process.
#pragma once

#include <memory>
#include <string>

#include "common/metrics.h"
#include "engine/engine.h"
#include "proto/stamen/v1/inference.pb.h"
#include "server/scheduler.h"

namespace stamen::server {

struct LocalWorkerOptions {
  std::string model_dir;
  std::string model_id;  // what Info reports; the folder's name when empty
  SchedulerOptions scheduler;
  engine::EngineOptions engine;
};

// The default --max-batch-tokens of the CPU backend: throughput per token stops growing
// beyond this batch size on the CPUs measured (docs/BENCHMARKS.md, "Worker").
inline constexpr int64_t kCpuDefaultMaxBatchTokens = 2048;

class LocalWorker {
 public:
  // Loads the model; `registry` (which must outlive the worker) receives the scheduler's metrics.
  static StatusOr<std::unique_ptr<LocalWorker>> Load(const LocalWorkerOptions& options, metrics::Registry& registry);

  Scheduler& scheduler() { return *scheduler_; }
  const engine::Engine& engine() const { return *engine_; }
  // Model and limits, as the Info call reports them.
  const v1::InfoResponse& info() const { return info_; }

 private:
  LocalWorker() = default;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<SchedulerMetrics> metrics_;
  std::unique_ptr<Scheduler> scheduler_;  // after engine_: destroyed (drained) first
  v1::InfoResponse info_;
};

}  // namespace stamen::server
