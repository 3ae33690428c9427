// Dense layers for short inputs: a query of a few tokens at batch 1, where each step streams
// every weight of the model once and does little arithmetic with it. oneDNN's AVX2 sgemm
// repacks the weight on every call, which at m ≤ 32 costs as much as the product itself.
// Here each weight is packed once, on its first short call, into panels of 16 output columns
// ([n / 16][k][16], zero-padded: prepared_weights.h), and an outer-product kernel computes
// 6 × 16 tiles of the output from them: per k, two loads of the panel and six broadcasts of
// the input feed twelve FMAs, so the loop is bound by FMAs, not loads.
//
// In bf16 (matrix_precision.h) the panels hold bf16, half the bytes a step streams, and the
// input is rounded to bf16 first; the products are summed in fp32. With AVX512-BF16 the
// panels hold pairs of depth steps for its dot-product instruction; elsewhere they are widened
// to fp32 in registers. Weights
// that get no packed copy (no owner, the cap reached) stay with oneDNN.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/ops/gemm.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::cpu {

// Up to this many rows the packed kernel runs; above it oneDNN is faster. With the AVX2 tiles
// the cut is 48 rows: MiniLM's 32- and 48-token steps ran 1.21× and 1.12× faster through them
// than through oneDNN's AVX2 sgemm, 64 rows and more about level (a Zen 4 held to AVX2; 24
// rows was the cut chosen from single GEMMs on Zen 3 under OpenMP, before the thread pool:
// docs/BENCHMARKS.md, "Short inputs, batch 1"). At 48 rows the largest product's input and one
// panel (48 × 1536 and 1536 × 16 floats, 384 KB) still fit a Zen 3 core's 512 KB L2. The
// AVX-512 tiles beat oneDNN's AVX-512 sgemm up to 64 rows (Emerald Rapids: "On AVX-512 and in
// bf16"), and lose to it from ~192.
constexpr int64_t kSmallGemmMaxRowsAvx2 = 48;
constexpr int64_t kSmallGemmMaxRowsAvx512 = 64;
// In bf16 with AVX512-BF16 the pair tiles beat oneDNN's bf16 matmul with a runtime row count
// (gemm:jit, which packs both operands per call) up to ~160 rows: MiniLM's 96-, 128- and
// 160-token steps ran 1.3–1.6× faster through them, 192 rows about level, 256 and 512 slower
// (AMD Zen 4, 2 threads; docs/BENCHMARKS.md, "bf16 on AMD Zen 4").
constexpr int64_t kSmallGemmMaxRowsBFloat16Pairs = 160;
// The cut of this machine's kernels in the calling thread's matrix precision.
int64_t SmallGemmMaxRows();
// Computes output = act(input · weightᵀ + bias) (or adds it to output) with packed weights,
// and returns true; returns false, computing nothing, when this call is not for it (more
// rows than SmallGemmMaxRows(), a weight without an owner, the cap reached). Computes in the
// calling thread's matrix precision. Shapes and dtypes are the caller's to check (ops::Gemm
// does). `weight` must not change while its memory lives: its packed copy is not refreshed.
bool SmallGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
               const ops::GemmOptions& options);

}  // namespace stamen::engine::cpu
