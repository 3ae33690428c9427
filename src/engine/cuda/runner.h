// The engine's CUDA side: owns the context (stream, cuBLASLt, pinned pool), stages each batch
// into device memory, runs the model's forward pass eagerly or as a lazily captured full-model
// CUDA graph, and returns a LazyResult backed by a pinned buffer and an event. No CUDA headers.
#pragma once

#include <functional>
#include <memory>

#include "engine/engine.h"
#include "engine/models/model.h"

namespace stamen::engine::cuda {

class Runner {
 public:
  // Fails with a clear message when there is no GPU (or the device index does not exist).
  static StatusOr<std::unique_ptr<Runner>> Create(const EngineOptions& options);
  ~Runner();

  // Runs `body` with this runner's context current on the calling thread (model loading
  // uploads its weights on the runner's stream).
  Status Run(const std::function<Status()>& body);

  // One step on a batch the engine has validated on the host (ids, lengths, options).
  StatusOr<LazyResult> Step(Model& model, const ModelConfig& config, DenseModules& dense, const Batch& batch,
                            const StepOptions& options, ops::PoolingMode pooling);

  // Thread-safe: a copy of the counters as the last step left them, and the device memory now.
  DeviceStats stats() const;
  // An error once the process's CUDA context hit a sticky fault (an illegal address, a trap):
  // every step fails from then on, and the worker must stop reporting itself ready.
  Status fault() const;

 private:
  Runner();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stamen::engine::cuda
