// Scaled dot-product attention over a ragged batch: sequences are concatenated along the
// token axis and `cu_seqlens` gives their boundaries, so no padding is ever computed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/ops/position_buckets.h"
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

// MPNet's relative position bias: a learned score per (bucket of j − i, head) added to
// query i's score for key j before the softmax, the same table for every layer.
struct RelativePositionBias {
  Tensor table;              // F32 [num_buckets, num_heads], on the attention's device
  int32_t num_buckets = 32;  // MPNet: always 32 (its encoder passes 32, whatever the config)
  int32_t max_distance = 128;
};

// RelativePositionBucket(j − i, num_buckets, max_distance), the bucket of a key's offset, is in
// position_buckets.h: the CPU and CUDA kernels share it.

// DeBERTa-v2/v3's disentangled attention: query i's score for key j (same sequence, positions
// from its start) gains, before the softmax and multiplied by the attention's scale,
//   content→position (c2p):  q_i · position_key[δ(i, j)]
//   position→content (p2c):  k_j · position_query[δ(i, j)]
// with δ(i, j) = DisentangledPositionIndex(i − j): the row of the layer's relative embeddings,
// projected by the position query/key weights (the layer's own q/k with share_att_key).
struct DisentangledPositionBias {
  // [2 · span, columns], of qkv's dtype and device (F32 cpu, BF16 cuda): row r holds head h's position query at
  // columns [query_column + h·d, + d) and its position key at [key_column + h·d, + d).
  Tensor projections{};
  int64_t query_column = -1;  // -1: no p2c term
  int64_t key_column = -1;    // -1: no c2p term
  int32_t span = 0;  // half the relative embedding rows: position_buckets, else max_relative_positions
  int32_t position_buckets = 0;  // > 0: log buckets (make_log_bucket_position); else raw distances
  int32_t max_relative_positions = 0;
};

// LogBucketPosition and DisentangledPositionRow, which the index below calls, are in
// position_buckets.h (shared by the CPU and CUDA kernels).

// The projections row query i reads for key j: clamp(bucket(i − j) + span, 0, 2·span − 1), where
// bucket is LogBucketPosition with position buckets, else the distance i − j itself.
int32_t DisentangledPositionIndex(int64_t relative_position, const DisentangledPositionBias& bias);

// ALiBi (JinaBERT's symmetric encoder variant): query i's score for key j gains
// −slope_h · |i − j| after scaling, positions counted from the sequence's start; no position
// embeddings elsewhere.
struct AlibiBias {
  Tensor slopes;  // F32 [num_heads], on the attention's device
};

// The ALiBi paper's head slopes, as JinaBERT's remote code computes them
// (jinaai/jina-bert-implementation, modeling_bert.py, _get_alibi_head_slopes): for n a power of
// two, slope_h = 2^(−8(h+1)/n); otherwise the slopes of the power of two p below n, then every
// other slope of 2p, the first n − p of them.
std::vector<float> AlibiSlopes(int64_t num_heads);

// Which keys a query sees and how scores are scaled. Query i of a sequence sees key j of the
// same sequence (positions counted from the sequence's start) when
//   (not causal or j ≤ i)  and  (window == 0 or |i − j| < window).
// The window bound is exclusive, as Hugging Face's sliding_window is where it is applied:
//   ModernBERT local layers:                 window = local_attention / 2 + 1 (|i − j| ≤ local_attention / 2)
//   EmbeddingGemma (bidirectional) sliding:  window = sliding_window / 2 + 1 (config.json's value; transformers
//                                            stores it already converted)
//   Gemma3 / causal sliding layers:          causal, window = sliding_window (i − window < j ≤ i)
struct AttentionOptions {
  bool causal = false;
  int64_t window = 0;  // 0: every key of the sequence (within the causal limit)
  float scale = 0.0f;  // multiplies q·k; 0: 1/sqrt(head_dim) (Gemma3: query_pre_attn_scalar^-0.5)
  // Logit soft-capping (Gemma 2's attn_logit_softcapping): a visible pair's scaled score s
  // becomes softcap·tanh(s / softcap) before the softmax; 0: none. Not combined with a position
  // bias (no model has both).
  float softcap = 0.0f;
  const RelativePositionBias* position_bias = nullptr;  // added after scaling; must outlive the call
  // DeBERTa's c2p / p2c terms; must outlive the call.
  const DisentangledPositionBias* disentangled_bias = nullptr;
  const AlibiBias* alibi = nullptr;  // added after scaling; must outlive the call
  // I32 [sequences] on the attention's device: sequence s's queries see only its first
  // key_lengths[s] keys (PyLate's query expansion tokens, unattended); null: every key. CPU only.
  const Tensor* key_lengths = nullptr;
};

// output[t, h·d:(h+1)·d] = softmax(q_h[t] · K_hᵀ · scale + bias_h) · V_h over the keys of t's
// own sequence that `options` lets t see (see AttentionOptions).
// qkv [T, layout.row_size()], cu_seqlens I32 [sequences + 1] (validated), output [T, heads·d].
Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const QkvLayout& layout,
                 const AttentionOptions& options, Tensor& output);

}  // namespace stamen::engine::ops
