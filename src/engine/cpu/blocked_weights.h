// oneDNN's blocked weight layout for its AVX-512 "brgemm" matmul, and the copies in it. oneDNN
// 2.6 builds those kernels only for a fixed row count; with the row count left to run time
// (how gemm.cc creates its general primitives) it falls back to its older gemm:jit kernels,
// which repack the weight on every call. On 128–512 rows a fixed-row primitive over a weight
// reordered once to the blocked layout runs 1.03–1.78× faster (docs/BENCHMARKS.md, "The new
// families at base size"), in the same bytes as the weight.
#pragma once

#include <cstddef>
#include <cstdint>

#include <oneapi/dnnl/dnnl.hpp>

namespace stamen::engine::cpu {

// The layout oneDNN picks for the weight of an [m, k] × [k, n] fp32 matmul (the same for every
// m this is used for; gemm.cc checks it per primitive). Empty where oneDNN has no brgemm
// kernel for fp32 (without AVX-512) or the layout is plain.
const dnnl::memory::desc& BlockedWeightLayout(int64_t n, int64_t k);

// Bytes of a weight [n, k] in that layout; 0 when it has none.
size_t BlockedWeightBytes(int64_t n, int64_t k);

// Writes the fp32 weight [n, k] (row-major: Wᵀ in oneDNN's "ba") into `target` in that layout.
void ReorderToBlocked(const float* weight, int64_t n, int64_t k, void* target);

}  // namespace stamen::engine::cpu
