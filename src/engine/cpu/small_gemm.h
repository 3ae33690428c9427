// Dense layers for short inputs: a query of a few tokens at batch 1, where each step streams
// every weight of the model once and does little arithmetic with it. oneDNN's AVX2 sgemm
// repacks the weight on every call, which at m ≤ 32 costs as much as the product itself.
// Here each weight is packed once, on its first short call, into panels of 16 output columns
// ([n / 16][k][16], zero-padded), and an outer-product kernel computes 6 × 16 tiles of the
// output from them: per k, two loads of the panel and six broadcasts of the input feed twelve
// FMAs, so the loop is bound by FMAs, not loads.
//
// The packed copy is kept beside the weight for as long as the weight's memory lives (it is
// found again by the weight's address and its memory's owner, so a later weight at a reused
// address is packed afresh). Packed copies are capped in total (kSmallGemmPackedBytesLimit);
// weights beyond the cap, and weights whose memory has no owner, stay with oneDNN.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/ops/gemm.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::cpu {

// Up to this many rows the packed kernel runs; above it oneDNN's blocked sgemm is faster
// (measured on Zen 3 AVX2 with MiniLM shapes: docs/BENCHMARKS.md, "Short inputs, batch 1").
constexpr int64_t kSmallGemmMaxRows = 24;
// Total bytes of packed copies in one process: 1 GiB covers the dense weights of models up
// to ~250M parameters (every BERT-base and XLM-R-base) in fp32.
constexpr size_t kSmallGemmPackedBytesLimit = size_t{1} << 30;

// Computes output = act(input · weightᵀ + bias) (or adds it to output) with packed weights,
// and returns true; returns false, computing nothing, when this call is not for it (more
// rows than kSmallGemmMaxRows, a weight without an owner, the cap reached). Shapes and dtypes
// are the caller's to check (ops::Gemm does). `weight` must not change while its memory
// lives: its packed copy is not refreshed.
bool SmallGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
               const ops::GemmOptions& options);

// Bytes of packed copies held now (for tests and logs).
size_t SmallGemmPackedBytes();

}  // namespace stamen::engine::cpu
