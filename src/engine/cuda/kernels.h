// The CUDA backend: one function per op, called by the op's device-independent part after it
// has checked dtypes (BF16 weights and activations), shapes and devices. Each enqueues its
// kernels on the stream of the current cuda::Context (see context.h) and returns at once;
// errors are launch errors, never results (kernels do not report bad data: the engine checks
// ids and lengths on the host before a step reaches the device).
//   - Gemm runs on cuBLASLt: bf16 in, fp32 accumulate, bias (and ReLU / tanh-GELU) fused in the
//     epilogue.
//   - Gather clamps ids into the table (the engine has checked them on the host).
//   - Attention takes causal, window, scale, MPNet's relative position bias and DeBERTa's c2p /
//     p2c terms as on the CPU; it runs on tensor cores where TensorCoreAttentionFits, on the
//     scalar kernel otherwise.
// This header needs no CUDA headers, so the ops compile with the host compiler alone.
#pragma once

#include <cstdint>

#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/gemm.h"
#include "engine/ops/pooling.h"
#include "model_folder/kinds.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::cuda {

#include "engine/ops/backend_kernels.inc"

// The scalar kernel alone (attention.cu), for every call Attention takes.
Status ScalarAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                       const ops::AttentionOptions& options, Tensor& output);
// tensor_core_attention.cu: whether its kernel takes this call (ChooseAttentionKernel, and a
// 16-byte aligned qkv), and the call itself.
bool TensorCoreAttentionFits(const Tensor& qkv, const ops::QkvLayout& layout, const ops::AttentionOptions& options);
Status TensorCoreAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                           const ops::AttentionOptions& options, Tensor& output);

// The reference gemm (a plain tiled kernel, fp32 accumulation): the fallback when cuBLASLt
// offers no algorithm for a shape, and a cross-check for the cuBLASLt path in tests.
Status ReferenceGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
                     const ops::GemmOptions& options);

}  // namespace stamen::engine::cuda
