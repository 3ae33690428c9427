// Warp-level bf16 tensor-core products (sm_80 and newer): mma.sync m16n8k16 with fp32
// accumulators, and the 32-bit register loads its fragments are made of.
//
// Fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"), for
// lane = 4 · group + quad (group 0..7, quad 0..3); each 32-bit register holds two bf16, the
// lower column (or k) in the low half:
//   A, 16 × 16 row-major, 4 registers: a[0] = (row group, k 2·quad + {0,1}),
//     a[1] = (row group + 8, same k), a[2] = (row group, k 8 + 2·quad + {0,1}), a[3] = (row group + 8, that k);
//   B, 16 × 8 (k × n), 2 registers: b[0] = (k 2·quad + {0,1}, column group), b[1] = (k 8 + 2·quad + {0,1}, same column);
//   C and D, 16 × 8 fp32, 4 values: c[0], c[1] = (row group, columns 2·quad + {0,1}), c[2], c[3] = (row group + 8, same columns).
// The host emulation (tests/cuda/host_emulation/cuda_shim.h) implements MultiplyAccumulate
// from this same table, so kernels built on it can be checked without a GPU.
#pragma once

#include <cstdint>
#include <cstring>

namespace stamen::engine::cuda {

// d += a · b for one warp (all 32 lanes must call it together).
__device__ __forceinline__ void MultiplyAccumulate(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  // The host launches tensor-core kernels only on sm_80 or newer (TensorCoreAttentionFits).
  __trap();
#endif
}

// Two adjacent bf16 (4-byte aligned) as one fragment register.
__device__ __forceinline__ uint32_t LoadPair(const __nv_bfloat16* pair) {
  return *reinterpret_cast<const uint32_t*>(pair);
}

// Two floats rounded to bf16 (round to nearest even), `low` in the low half.
__device__ __forceinline__ uint32_t PackPair(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  uint32_t bits;
  memcpy(&bits, &pair, sizeof(bits));
  return bits;
}

}  // namespace stamen::engine::cuda
