// Helpers shared by the .cu files: bf16 loads and stores, block reductions, launch checks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/context.h"
#include "engine/tensor.h"

namespace stamen::engine::cuda {

using bf16 = __nv_bfloat16;

// Number of blocks of `threads` covering `count` items, capped for grid-stride loops.
inline unsigned int BlocksFor(int64_t count, int threads) {
  const int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned int>(blocks < 1 ? 1 : (blocks > 65535 * 16 ? 65535 * 16 : blocks));
}

__device__ __forceinline__ float WarpSum(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ __forceinline__ float WarpMax(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
// `scratch` holds 32 floats; the call ends with the scratch free for reuse.
__device__ __forceinline__ float BlockSum(float value, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  value = WarpSum(value);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / 32;
  float total = lane < warps ? scratch[lane] : 0.0f;
  return WarpSum(total);
}

// Element `i` of a float tensor of `type` (F32, BF16 or F16) as fp32.
__device__ __forceinline__ float LoadFloat(const void* data, int64_t i, DataType type) {
  switch (type) {
    case DataType::kBF16: return __bfloat162float(static_cast<const bf16*>(data)[i]);
    case DataType::kF16: return __half2float(static_cast<const __half*>(data)[i]);
    default: return static_cast<const float*>(data)[i];
  }
}

__device__ __forceinline__ void StoreFloat(void* data, int64_t i, DataType type, float value) {
  switch (type) {
    case DataType::kBF16: static_cast<bf16*>(data)[i] = __float2bfloat16(value); break;
    case DataType::kF16: static_cast<__half*>(data)[i] = __float2half(value); break;
    default: static_cast<float*>(data)[i] = value; break;
  }
}

}  // namespace stamen::engine::cuda
