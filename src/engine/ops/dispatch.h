// The one device dispatch of every op: after its checks, an op hands the kernel call for
// each backend to Dispatch, which runs the one for the tensors' device. Both backends'
// kernels (cpu/kernels.h, cuda/kernels.h) return Status, so the two calls look alike.
#pragma once

#include <string_view>
#include <type_traits>

#include "engine/cpu/kernels.h"
#include "engine/ops/checks.h"
#include "engine/status.h"
#include "engine/tensor.h"
#if STAMEN_WITH_CUDA
#include "engine/cuda/kernels.h"
#endif

namespace stamen::engine::ops::internal {

// What STAMEN_CUDA_KERNEL leaves in place of the CUDA kernel call in a build without CUDA.
struct NoCudaKernel {};

// Why a macro: without CUDA the cuda:: kernels are not declared, so a call to one must not
// reach the compiler at all, and only the preprocessor can drop it. Every alternative puts an
// `#if` back into each op (guarded lambda bodies) or declares kernels that do not exist. The
// macro does nothing else: its argument is an ordinary lambda, written out at the call site.
#if STAMEN_WITH_CUDA
#define STAMEN_CUDA_KERNEL(...) __VA_ARGS__
#else
#define STAMEN_CUDA_KERNEL(...) ::stamen::engine::ops::internal::NoCudaKernel()
#endif

// Runs `run_on_cpu()` or `run_on_cuda()` (each returns Status) for `device`; a device whose
// backend is not in this build is an error naming `op`.
template <typename CpuKernel, typename CudaKernel>
Status Dispatch(std::string_view op, Device device, CpuKernel&& run_on_cpu, [[maybe_unused]] CudaKernel&& run_on_cuda) {
  if (device == Device::kCpu) return run_on_cpu();
  if constexpr (!std::is_same_v<std::decay_t<CudaKernel>, NoCudaKernel>) {
    if (device == Device::kCuda) return run_on_cuda();
  }
  return DeviceNotBuilt(op, device);
}

}  // namespace stamen::engine::ops::internal
