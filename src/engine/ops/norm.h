// Normalisations over the last axis: LayerNorm (BERT, XLM-R) and RMSNorm (Qwen, Gemma3), plus
// Qwen3's per-head RMSNorm of queries and keys inside a packed qkv tensor, and JinaBERT
// qk-post-norm's LayerNorm of each token's whole query and whole key there.
#pragma once

#include "engine/ops/attention.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

// output = (x - mean(x)) / sqrt(var(x) + eps) · gamma + beta, x = input + residual (residual
// may be empty), per row of [rows, n]; F32. `output` may be `input` or `residual`. `beta` may
// be empty: no bias (ModernBERT's norm_bias false).
Status LayerNorm(const Tensor& input, const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
                 Tensor& output);

// output = x / sqrt(mean(x²) + eps) · weight per row of [rows, n]; F32; `output` may be `input`.
// With `accumulate`, output += instead: Gemma3 norms a block's output before the residual add.
Status RmsNorm(const Tensor& input, const Tensor& weight, float eps, Tensor& output, bool accumulate = false);

// In place, RMSNorm of every query head with `query_weight` [head_dim] and every key head
// with `key_weight` [head_dim] in `qkv` packed as `layout` describes (values untouched).
Status RmsNormHeads(Tensor& qkv, const QkvLayout& layout, const Tensor& query_weight, const Tensor& key_weight,
                    float eps);

// In place, LayerNorm (as LayerNorm above) of every token's whole query, its num_heads·head_dim
// values, with `query_gamma` / `query_beta`, and of its whole key with `key_gamma` / `key_beta`,
// in `qkv` packed as `layout` describes (values untouched): the norm runs before the heads
// split (jinaai/jina-bert-v2-qk-post-norm's layer_norm_q / layer_norm_k).
Status LayerNormQueryKey(Tensor& qkv, const QkvLayout& layout, const Tensor& query_gamma, const Tensor& query_beta,
                         const Tensor& key_gamma, const Tensor& key_beta, float eps);

}  // namespace stamen::engine::ops
