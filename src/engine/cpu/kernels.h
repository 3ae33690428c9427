// The CPU backend: one function per op, called by the op's device-independent part after
// it has checked dtypes, shapes and devices (so these only compute). They return Status like
// the CUDA backend's, so one dispatch (ops/dispatch.h) serves both; most cannot fail.
#pragma once

#include <string>

#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/gemm.h"
#include "engine/ops/pooling.h"
#include "model_folder/kinds.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::cpu {

Status Convert(const Tensor& input, Tensor& output);
Status Zero(Tensor& tensor);
// Fails only if oneDNN does (an unsupported shape or out of memory).
Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const ops::GemmOptions& options);
// Both dense layers of a feed-forward block (ops::FeedForwardGemms).
Status FeedForwardGemms(const Tensor& input, const Tensor& up_weight, const Tensor& up_bias,
                        ops::Activation activation, const Tensor& down_weight, const Tensor& down_bias,
                        Tensor& intermediate, Tensor& output, bool accumulate);
// The kernels Gemm runs on this machine in fp32 or bf16, by row count, as `/info` and the logs
// report them: e.g. "stamen AVX-512 tiles up to 128 rows, oneDNN brg:avx512_core (fixed rows) to
// 512, oneDNN gemm:jit above".
std::string DescribeGemm(bool bfloat16);
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
// Fails on an id outside the table.
Status Gather(const Tensor& table, const Tensor& ids, Tensor& output, bool accumulate, float scale);
Status SequencePositions(const Tensor& cu_seqlens, int32_t offset, Tensor& positions);
Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                 const ops::AttentionOptions& options, Tensor& output);
Status Pool(const Tensor& hidden, const Tensor& cu_seqlens, ops::PoolingMode mode, Tensor& output);
Status SpladePool(const Tensor& logits, const Tensor& cu_seqlens, int64_t first_token, Tensor& output);
Status L2Normalize(const Tensor& input, Tensor& output);
Status ScaledTanhRound(Tensor& values, float scale);

}  // namespace stamen::engine::cpu
