// Scaled dot-product attention over a ragged batch: sequences are concatenated along the
// token axis and `cu_seqlens` gives their boundaries, so no padding is ever computed.
#pragma once

#include <cstdint>
#include <span>

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

// How one token's row of a packed qkv tensor is laid out: `num_heads` query heads, then
// `num_kv_heads` key heads, then `num_kv_heads` value heads, each `head_dim` floats. Query
// head h attends with key/value head h / (num_heads / num_kv_heads) (grouped-query).
struct QkvLayout {
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;

  int64_t row_size() const { return (num_heads + 2 * num_kv_heads) * head_dim; }
};

// Checks `cu_seqlens` on the host before it reaches any kernel: starts at 0, never
// decreases, ends at `total_tokens`; with `allow_empty` false, every sequence has a token.
Status ValidateCuSeqlens(std::span<const int32_t> cu_seqlens, int64_t total_tokens, bool allow_empty);

// output[t, h·d:(h+1)·d] = softmax(q_h[t] · K_hᵀ · scale) · V_h over the keys of t's own
// sequence (and only keys at or before t when `causal`), scale = 1/sqrt(head_dim).
// qkv [T, layout.row_size()], cu_seqlens I32 [sequences + 1] (validated), output [T, heads·d].
Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const QkvLayout& layout, bool causal,
                 Tensor& output);

}  // namespace stamen::engine::ops
