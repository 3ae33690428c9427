// Just enough of CUDA, on the host, to run the attention kernels (attention.cu,
// tensor_core_attention.cu) unchanged in logic: one std::thread per CUDA thread of a 128-thread
// block, a block barrier for __syncthreads and a warp barrier around each shuffle, ballot and
// tensor-core product (a warp's lanes meet, exchange, meet again).
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
  // Each lane's fragment registers of one warp-wide mma.sync (MultiplyAccumulate below).
  struct Fragments {
    uint32_t a[32][4];
    uint32_t b[32][2];
  } fragments[kEmulatedWarps] = {};
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
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
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

// tensor_core.cuh's helpers. MultiplyAccumulate is mma.sync m16n8k16 (bf16 in, fp32
// accumulate): every lane publishes its fragment registers, then computes its own four outputs
// from all lanes' registers through the PTX fragment table that tensor_core.cuh states
// (lane = 4 · group + quad), so a kernel that reads or writes a fragment element in the wrong
// place gives wrong results here as on the GPU.
inline uint32_t LoadPair(const __nv_bfloat16* pair) {
  uint32_t bits;
  std::memcpy(&bits, pair, sizeof(bits));
  return bits;
}
inline uint32_t PackPair(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  uint32_t bits;
  std::memcpy(&bits, &pair, sizeof(bits));
  return bits;
}
inline void MultiplyAccumulate(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  const int lane = threadIdx.x % 32;
  EmulatedBlock::Fragments& fragments = emulated_block->fragments[threadIdx.x / 32];
  for (int r = 0; r < 4; ++r) fragments.a[lane][r] = a[r];
  for (int r = 0; r < 2; ++r) fragments.b[lane][r] = b[r];
  __syncwarp();
  const auto half = [](uint32_t word, int k) {
    return __bfloat162float({static_cast<uint16_t>(k % 2 == 0 ? word & 0xffffu : word >> 16)});
  };
  // A (row, k): lane 4 · (row % 8) + (k % 8) / 2, register row / 8 + 2 · (k / 8).
  // B (k, column): lane 4 · column + (k % 8) / 2, register k / 8.
  const auto a_at = [&](int row, int k) { return half(fragments.a[4 * (row % 8) + (k % 8) / 2][row / 8 + 2 * (k / 8)], k); };
  const auto b_at = [&](int k, int column) { return half(fragments.b[4 * column + (k % 8) / 2][k / 8], k); };
  const int group = lane / 4, quad = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = group + 8 * (i / 2);
    const int column = 2 * quad + i % 2;
    float sum = d[i];
    for (int k = 0; k < 16; ++k) sum += a_at(row, k) * b_at(k, column);
    d[i] = sum;
  }
  __syncwarp();  // no lane overwrites its registers while another still reads them
}
}  // namespace stamen::engine::cuda
