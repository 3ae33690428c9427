// Just enough of CUDA, on the host, to run attention.cu's kernel unchanged in logic: one
// std::thread per CUDA thread of a 128-thread block, a block barrier for __syncthreads and a
// warp barrier around each shuffle and ballot (a warp's lanes meet, exchange, meet again).
// Why: no GPU was available when the kernel's position terms were written, and this runs its
// indexing, tiling, masking and online softmax as written on any machine. It cannot check what
// only hardware decides (timing, memory-model subtleties beyond barriers, CUDA's math library).
#pragma once

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

using std::abs;
using std::max;
using std::min;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(threads)

constexpr int kEmulatedThreads = 128;  // attention.cu's kThreads
constexpr int kEmulatedWarps = kEmulatedThreads / 32;

struct EmulatedIndex {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local EmulatedIndex threadIdx, blockIdx;

// What the threads of one block share: barriers, the shuffle exchange, shared memory.
struct EmulatedBlock {
  std::barrier<> block{kEmulatedThreads};
  std::unique_ptr<std::barrier<>> warps[kEmulatedWarps];
  int64_t exchange[kEmulatedWarps][32] = {};
  unsigned char* dynamic_shared = nullptr;
  int shared_ints[2] = {};  // the kernel's static __shared__ ints
  EmulatedBlock() {
    for (auto& warp : warps) warp = std::make_unique<std::barrier<>>(32);
  }
};
inline thread_local EmulatedBlock* emulated_block = nullptr;

inline void __syncthreads() { emulated_block->block.arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emulated_block->warps[threadIdx.x / 32]->arrive_and_wait(); }

// Every lane publishes `value`, then reads lane `source`'s.
template <typename T>
T ExchangeInWarp(T value, int source) {
  const int warp = threadIdx.x / 32;
  int64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  emulated_block->exchange[warp][threadIdx.x % 32] = bits;
  __syncwarp();
  const int64_t read = emulated_block->exchange[warp][source];
  __syncwarp();
  T result;
  std::memcpy(&result, &read, sizeof(T));
  return result;
}

template <typename T>
T __shfl_up_sync(unsigned, T value, int offset) {
  const int lane = threadIdx.x % 32;
  return ExchangeInWarp(value, lane >= offset ? lane - offset : lane);
}
template <typename T>
T __shfl_sync(unsigned, T value, int source) {
  return ExchangeInWarp(value, source);
}
template <typename T>
T __shfl_xor_sync(unsigned, T value, int mask) {
  return ExchangeInWarp(value, (threadIdx.x % 32) ^ mask);
}
inline unsigned __ballot_sync(unsigned, bool predicate) {
  const int warp = threadIdx.x / 32;
  emulated_block->exchange[warp][threadIdx.x % 32] = predicate;
  __syncwarp();
  unsigned mask = 0;
  for (int lane = 0; lane < 32; ++lane) mask |= emulated_block->exchange[warp][lane] != 0 ? 1u << lane : 0u;
  __syncwarp();
  return mask;
}

// bf16 as bits, converted with round-to-nearest-even as CUDA's intrinsics do.
struct __nv_bfloat16 {
  uint16_t bits;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
struct float2 {
  float x, y;
};
inline float __bfloat162float(__nv_bfloat16 value) {
  const uint32_t bits = uint32_t{value.bits} << 16;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}
inline __nv_bfloat16 __float2bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return {static_cast<uint16_t>(bits >> 16)};
}
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16(a), __float2bfloat16(b)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 value) {
  return {__bfloat162float(value.x), __bfloat162float(value.y)};
}

// common.cuh's helpers that the kernel calls.
namespace stamen::engine::cuda {
using bf16 = __nv_bfloat16;
inline float WarpSum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}
inline float WarpMax(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}
}  // namespace stamen::engine::cuda
