// A CUDA context as one engine owns it: the device, one non-blocking compute stream, the cuBLASLt handle
// and workspace, cached gemm plans and a pool of pinned host buffers for results. Ops on cuda
// tensors enqueue on the stream of the context made current on the calling thread by a
// ScopedContext (the engine does this around Load and Step; tests do it themselves).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "engine/status.h"

namespace stamen::engine::cuda {

// The error of a failed CUDA runtime call, naming `what`; ok for cudaSuccess.
Status CheckCuda(cudaError_t error, std::string_view what);
// The error of the last kernel launch (cudaGetLastError), naming `kernel`.
Status CheckLaunch(std::string_view kernel);
// True for the errors that leave the process's CUDA context unusable (an illegal address, a
// failed launch, a trap): every later call fails with the same error. CheckCuda remembers the
// first one it sees.
bool IsStickyError(cudaError_t error);
// The first sticky error CheckCuda saw in this process, as an error; ok while there is none.
Status StickyFault();

// A page-locked host buffer with an event recorded after the copy that fills it.
struct PinnedBlock {
  void* data = nullptr;
  size_t capacity = 0;
  cudaEvent_t ready = nullptr;
};

// Reuses pinned buffers: a block goes back to the pool when its last owner (a LazyResult)
// lets go, so steady-state steps never call cudaMallocHost. A reused block is handed out only
// after its `ready` event completed (its owner may have let go before the copy into it ended).
// Thread-safe: results may be released on another thread than the one stepping.
class PinnedPool {
 public:
  PinnedPool();
  ~PinnedPool();
  // A block of at least `bytes`; its event is free to be recorded.
  StatusOr<std::shared_ptr<PinnedBlock>> Acquire(size_t bytes);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

struct GemmPlans;  // cuBLASLt descriptors and algorithms per shape (gemm.cc)

class Context {
 public:
  static StatusOr<std::unique_ptr<Context>> Create(int device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t blas() const { return blas_; }
  void* blas_workspace() const { return blas_workspace_; }
  size_t blas_workspace_bytes() const { return blas_workspace_bytes_; }
  GemmPlans& gemm_plans() { return *gemm_plans_; }
  PinnedPool& pinned() { return pinned_; }
  // True while the stream is being captured into a graph.
  bool capturing() const;
  Status Synchronize();

 private:
  Context() = default;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  void* blas_workspace_ = nullptr;
  size_t blas_workspace_bytes_ = 0;
  std::unique_ptr<GemmPlans, void (*)(GemmPlans*)> gemm_plans_{nullptr, nullptr};
  PinnedPool pinned_;
};

// The context current on this thread, or null.
Context* Current();
// The current context, or an error naming `op` when none is current.
StatusOr<Context*> RequireContext(std::string_view op);

// Makes `context` current on this thread (and its device the thread's device) until
// destruction, then restores the previous one.
class ScopedContext {
 public:
  explicit ScopedContext(Context* context);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  Context* previous_;
};

// gemm.cc: creates and destroys the plan cache.
GemmPlans* CreateGemmPlans();
void DestroyGemmPlans(GemmPlans* plans);

}  // namespace stamen::engine::cuda
