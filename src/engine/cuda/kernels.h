// The CUDA backend: one function per op, called by the op's device-independent part after it
// has checked dtypes (BF16 weights and activations), shapes and devices. Each enqueues its
// kernels on the stream of the current cuda::Context (see context.h) and returns at once;
// errors are launch errors, never results (kernels do not report bad data: the engine checks
// ids and lengths on the host before a step reaches the device).
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

Status Convert(const Tensor& input, Tensor& output);
Status Zero(Tensor& tensor);
// cuBLASLt: bf16 in, fp32 accumulate, bias (and ReLU / tanh-GELU) fused in the epilogue.
Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const ops::GemmOptions& options);
Status Activate(ops::Activation activation, const Tensor& input, Tensor& output);
Status GatedActivation(ops::Activation activation, const Tensor& gate_up, Tensor& output);
Status LayerNorm(const Tensor& input, const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
                 Tensor& output);
Status RmsNorm(const Tensor& input, const Tensor& weight, float eps, Tensor& output, bool accumulate);
Status RmsNormHeads(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& query_weight, const Tensor& key_weight,
                    float eps);
Status LayerNormQueryKey(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& query_gamma, const Tensor& query_beta,
                         const Tensor& key_gamma, const Tensor& key_beta, float eps);
Status RopeTable(const Tensor& positions, double base, Tensor& table, const ops::RopeScaling& scaling,
                 const Tensor& cu_seqlens);
Status ApplyRope(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& table);
// Ids are clamped into the table (the engine has checked them on the host).
Status Gather(const Tensor& table, const Tensor& ids, Tensor& output, bool accumulate, float scale);
Status SequencePositions(const Tensor& cu_seqlens, int32_t offset, Tensor& positions);
// Causal, window, scale, MPNet's relative position bias and DeBERTa's c2p / p2c terms as on the CPU.
// Runs on tensor cores where TensorCoreAttentionFits, on the scalar kernel otherwise.
Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                 const ops::AttentionOptions& options, Tensor& output);
// The scalar kernel alone (attention.cu), for every call Attention takes.
Status ScalarAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                       const ops::AttentionOptions& options, Tensor& output);
// tensor_core_attention.cu: whether its kernel takes this call (ChooseAttentionKernel, and a
// 16-byte aligned qkv), and the call itself.
bool TensorCoreAttentionFits(const Tensor& qkv, const ops::QkvLayout& layout, const ops::AttentionOptions& options);
Status TensorCoreAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                           const ops::AttentionOptions& options, Tensor& output);
Status Pool(const Tensor& hidden, const Tensor& cu_seqlens, ops::PoolingMode mode, Tensor& output);
Status SpladePool(const Tensor& logits, const Tensor& cu_seqlens, int64_t first_token, Tensor& output);
Status L2Normalize(const Tensor& input, Tensor& output);
Status ScaledTanhRound(Tensor& values, float scale);

// The reference gemm (a plain tiled kernel, fp32 accumulation): the fallback when cuBLASLt
// offers no algorithm for a shape, and a cross-check for the cuBLASLt path in tests.
Status ReferenceGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
                     const ops::GemmOptions& options);

}  // namespace stamen::engine::cuda
