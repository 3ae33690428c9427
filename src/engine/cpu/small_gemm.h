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

// Up to this many rows the packed kernel runs; above it oneDNN is faster. Measured on the
// engine, real all-MiniLM-L6-v2 steps, 2 threads, the cut moved by a temporary switch, on a Zen 4
// (natively and held to AVX2 on both sides) after the tiles took the interleaved prefetch
// (docs/BENCHMARKS.md, "The cuts raised"):
// - AVX2: the tiles beat oneDNN's AVX2 sgemm (which repacks the weight on every call) up to
//   512 rows (64 rows 7.5 against 9.5–12.7 ms, 128 rows 15.3 against 17.0, 512 rows 72–78
//   against 76–87), are level at 1024 and lose from 2048.
// - AVX-512 fp32: ahead of oneDNN's AVX-512 sgemm to 192 rows (128 rows 14.5–14.8 against
//   15.5–17.1 ms), level at 256 and 512. The cut stays at 128 because an Emerald Rapids run,
//   taken before the prefetch, had oneDNN ahead from ~192 rows.
// - bf16 with AVX512-BF16: the pair tiles beat oneDNN's bf16 matmul with a runtime row count
//   (gemm:jit, which packs both operands per call) up to 256 rows (192 rows 14.2–15.4 against
//   15.5–17.5 ms), level at 512.
constexpr int64_t kSmallGemmMaxRowsAvx2 = 512;
constexpr int64_t kSmallGemmMaxRowsAvx512 = 128;
constexpr int64_t kSmallGemmMaxRowsBFloat16Pairs = 256;
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
