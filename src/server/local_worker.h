// A worker without a network: the engine of one model folder behind a scheduler, with its
// metrics. `stamen worker` puts it behind gRPC; `stamen serve` hands it requests from the
// gateway in the same process.
#pragma once

#include <memory>
#include <string>

#include "common/metrics.h"
#include "engine/engine.h"
#include "proto/stamen/v1/inference.pb.h"
#include "server/device_metrics.h"
#include "server/scheduler.h"

namespace stamen::server {

struct LocalWorkerOptions {
  std::string model_dir;
  std::string model_id;  // what Info reports; the folder's name when empty
  SchedulerOptions scheduler;
  engine::EngineOptions engine;
};

// The default --max-batch-tokens of the CPU backend. Measured with `stamen bench knee` on
// real all-MiniLM-L6-v2 (docs/BENCHMARKS.md, "Worker", 2-core VM under load): on one thread
// tokens/s is flat from 256 tokens on (±6%); with two threads 2048 reaches 92–100% of the best
// budget at seq 32 and 512 (60% at seq 128, still rising to 8192), and 8192 was slower than
// 2048 at seq 32. A larger budget only makes short requests wait behind longer batches.
inline constexpr int64_t kCpuDefaultMaxBatchTokens = 2048;
// On a GPU a batch of about 512 tokens already saturates a sub-1B model (the published
// design's figure; linear layers dominate and cost grows with tokens): larger batches only add
// latency. To be replaced by the knee measured on the H200 (`stamen bench knee`, issue 20).
inline constexpr int64_t kCudaDefaultMaxBatchTokens = 512;
// With --max-queued-tokens unset (0), the queue holds this many full batches: 1,048,576 tokens
// on the CPU, 262,144 on a GPU.
inline constexpr int64_t kDefaultQueuedBatches = 512;

class LocalWorker {
 public:
  // Loads the model; `registry` (which must outlive the worker) receives the scheduler's metrics.
  static StatusOr<std::unique_ptr<LocalWorker>> Load(const LocalWorkerOptions& options, metrics::Registry& registry);

  Scheduler& scheduler() { return *scheduler_; }
  const engine::Engine& engine() const { return *engine_; }
  // Ok while the engine can compute (engine::Engine::health); Health and the in-process
  // gateway report the worker not ready otherwise.
  Status health() const { return engine_->health(); }
  // Model and limits, as the Info call reports them.
  const v1::InfoResponse& info() const { return info_; }

 private:
  LocalWorker() = default;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<SchedulerMetrics> metrics_;
  std::unique_ptr<DeviceMetrics> device_metrics_;  // on a GPU only
  std::unique_ptr<Scheduler> scheduler_;  // after engine_: destroyed (drained) first
  v1::InfoResponse info_;
};

}  // namespace stamen::server
