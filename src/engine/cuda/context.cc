// CUDA context, pinned buffer pool, device memory and copies.
#include "engine/cuda/context.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>

#include "engine/cuda/runtime.h"

namespace stamen::engine::cuda {
namespace {

thread_local Context* current_context = nullptr;

// cuBLASLt's workspace: 32 MiB is what NVIDIA recommends for Hopper.
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;

}  // namespace

namespace {

// The first sticky error of this process (0: none). Such an error corrupts the CUDA context of
// the process: every later call fails with it, so the engine stops pretending to be ready.
std::atomic<int> sticky_error{0};

}  // namespace

bool IsStickyError(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

Status StickyFault() {
  const int error = sticky_error.load(std::memory_order_acquire);
  if (error == 0) return Status();
  const auto code = static_cast<cudaError_t>(error);
  return Status::Error(std::string("the GPU hit an unrecoverable error (") + cudaGetErrorName(code) + ": " +
                       cudaGetErrorString(code) + "); this process can no longer use it and must be restarted");
}

Status CheckCuda(cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return Status();
  if (IsStickyError(error)) {
    int none = 0;
    sticky_error.compare_exchange_strong(none, static_cast<int>(error), std::memory_order_acq_rel);
  }
  return Status::Error("CUDA error in " + std::string(what) + ": " + cudaGetErrorName(error) + " (" +
                       cudaGetErrorString(error) + ")");
}

Status CheckLaunch(std::string_view kernel) { return CheckCuda(cudaGetLastError(), kernel); }

// ---- pinned pool ----

struct PinnedPool::State {
  std::mutex mutex;
  std::vector<PinnedBlock*> free;
  bool closed = false;
};

namespace {

void FreeBlock(PinnedBlock* block) {
  if (block->ready != nullptr) cudaEventDestroy(block->ready);
  if (block->data != nullptr) cudaFreeHost(block->data);
  delete block;
}

}  // namespace

PinnedPool::PinnedPool() : state_(std::make_shared<State>()) {}

PinnedPool::~PinnedPool() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->closed = true;
  for (PinnedBlock* block : state_->free) FreeBlock(block);
  state_->free.clear();
}

StatusOr<std::shared_ptr<PinnedBlock>> PinnedPool::Acquire(size_t bytes) {
  PinnedBlock* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    // Smallest free block that fits.
    size_t best = state_->free.size();
    for (size_t i = 0; i < state_->free.size(); ++i) {
      if (state_->free[i]->capacity >= bytes &&
          (best == state_->free.size() || state_->free[i]->capacity < state_->free[best]->capacity)) {
        best = i;
      }
    }
    if (best < state_->free.size()) {
      block = state_->free[best];
      state_->free.erase(state_->free.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
  if (block != nullptr) {
    // A block comes back when its last owner lets go, which may be before its copy finished (a
    // result dropped without Wait): the new owner must not write or read it until then.
    const Status done = CheckCuda(cudaEventSynchronize(block->ready), "waiting for a reused pinned buffer");
    if (!done.ok()) {
      FreeBlock(block);
      return done;
    }
  }
  if (block == nullptr) {
    // Round up to a power of two (at least 64 KiB) so nearby sizes share blocks.
    size_t capacity = size_t{64} << 10;
    while (capacity < bytes) capacity *= 2;
    block = new PinnedBlock();
    block->capacity = capacity;
    Status status = CheckCuda(cudaMallocHost(&block->data, capacity), "cudaMallocHost");
    if (status.ok()) status = CheckCuda(cudaEventCreateWithFlags(&block->ready, cudaEventDisableTiming), "cudaEventCreate");
    if (!status.ok()) {
      FreeBlock(block);
      return status;
    }
  }
  std::weak_ptr<State> weak = state_;
  return std::shared_ptr<PinnedBlock>(block, [weak](PinnedBlock* returned) {
    if (auto state = weak.lock()) {
      std::lock_guard<std::mutex> lock(state->mutex);
      // Keep a bounded number of spare blocks.
      if (!state->closed && state->free.size() < 64) {
        state->free.push_back(returned);
        return;
      }
    }
    FreeBlock(returned);
  });
}

// ---- context ----

StatusOr<std::unique_ptr<Context>> Context::Create(int device) {
  std::string why;
  const int count = DeviceCount(&why);
  if (count == 0) return Status::Error("no CUDA device is available: " + why);
  if (device < 0 || device >= count) {
    return Status::Error("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                         " found)");
  }
  std::unique_ptr<Context> context(new Context());
  context->device_ = device;
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaSetDevice(device), "cudaSetDevice"));
  // A non-blocking stream: it never waits on the legacy default stream, nor does the legacy
  // stream wait on it, so another engine's (another model's) work or allocation on this GPU
  // cannot break a capture in progress here. Nothing of ours uses the legacy stream while a
  // context is current: AllocateDevice zeroes new memory on this stream (cudaMemsetAsync).
  STAMEN_RETURN_IF_ERROR(
      CheckCuda(cudaStreamCreateWithFlags(&context->stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  if (cublasLtCreate(&context->blas_) != CUBLAS_STATUS_SUCCESS) return Status::Error("cublasLtCreate failed");
  context->blas_workspace_bytes_ = kBlasWorkspaceBytes;
  STAMEN_RETURN_IF_ERROR(
      CheckCuda(cudaMalloc(&context->blas_workspace_, context->blas_workspace_bytes_), "cudaMalloc (cuBLASLt workspace)"));
  context->gemm_plans_ = {CreateGemmPlans(), &DestroyGemmPlans};
  return context;
}

Context::~Context() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  gemm_plans_.reset();
  if (blas_workspace_ != nullptr) cudaFree(blas_workspace_);
  if (blas_ != nullptr) cublasLtDestroy(blas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

bool Context::capturing() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream_, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone;
}

Status Context::Synchronize() { return CheckCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

Context* Current() { return current_context; }

StatusOr<Context*> RequireContext(std::string_view op) {
  if (current_context == nullptr) {
    return Status::Error(std::string(op) +
                         ": no CUDA context is current (cuda ops run inside an engine step or a cuda::ScopedContext)");
  }
  return current_context;
}

ScopedContext::ScopedContext(Context* context) : previous_(current_context) {
  current_context = context;
  if (context != nullptr) cudaSetDevice(context->device());
}

ScopedContext::~ScopedContext() {
  current_context = previous_;
  if (previous_ != nullptr) cudaSetDevice(previous_->device());
}

// ---- runtime.h ----

int DeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    if (why == nullptr) return 0;
    // Without a driver the runtime blames its version (cudaErrorInsufficientDriver): on a
    // machine with no GPU at all, say that instead.
    std::error_code ignored;
    const bool driver = std::filesystem::exists("/proc/driver/nvidia/version", ignored);
    if (!driver && (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice)) {
      *why = "this machine has no NVIDIA GPU (no driver is loaded: /proc/driver/nvidia/version is missing)";
    } else {
      *why = std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
    }
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "the driver reports no GPU";
  return count;
}

std::string DeviceDescription(int device) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return "unknown CUDA device";
  const double gib = static_cast<double>(properties.totalGlobalMem) / (1u << 30);
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f", gib);
  return std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ", " + memory + " GiB)";
}

int ComputeCapabilityMajor(int device) {
  static std::atomic<int> majors[16] = {};
  const bool cached = device >= 0 && device < 16;
  if (cached && majors[device].load() > 0) return majors[device].load();
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (cached) majors[device].store(major);
  return major;
}

StatusOr<std::shared_ptr<void>> AllocateDevice(size_t bytes) {
  if (current_context != nullptr && current_context->capturing()) {
    return Status::Error("device allocation of " + std::to_string(bytes) + " bytes during graph capture");
  }
  void* memory = nullptr;
  const size_t padded = bytes == 0 ? 256 : (bytes + 255) / 256 * 256;
  const cudaError_t error = cudaMalloc(&memory, padded);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return Status::Error("out of device memory allocating " + std::to_string(bytes) + " bytes: " +
                         cudaGetErrorString(error));
  }
  // Zeroed on the current context's stream, so it is ordered before every later use there (the
  // stream is non-blocking: a legacy-stream memset would not be). Without a context, on the
  // legacy stream, waited for.
  Status zeroed;
  if (current_context != nullptr) {
    zeroed = CheckCuda(cudaMemsetAsync(memory, 0, padded, current_context->stream()), "cudaMemsetAsync");
  } else {
    zeroed = CheckCuda(cudaMemset(memory, 0, padded), "cudaMemset");
    if (zeroed.ok()) zeroed = CheckCuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  }
  if (!zeroed.ok()) {
    cudaFree(memory);
    return zeroed;
  }
  return std::shared_ptr<void>(memory, [](void* p) { cudaFree(p); });
}

Status CopyBytes(void* target, Device target_device, const void* source, Device source_device, size_t bytes) {
  if (bytes == 0) return Status();
  cudaMemcpyKind kind = cudaMemcpyDefault;
  if (target_device == Device::kCuda && source_device == Device::kCpu) kind = cudaMemcpyHostToDevice;
  if (target_device == Device::kCpu && source_device == Device::kCuda) kind = cudaMemcpyDeviceToHost;
  if (target_device == Device::kCuda && source_device == Device::kCuda) kind = cudaMemcpyDeviceToDevice;
  cudaStream_t stream = current_context != nullptr ? current_context->stream() : nullptr;
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaMemcpyAsync(target, source, bytes, kind, stream), "cudaMemcpyAsync"));
  return CheckCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

}  // namespace stamen::engine::cuda
