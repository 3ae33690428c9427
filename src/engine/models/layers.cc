// The attention and feed-forward blocks, as sequences of ops.
#include "engine/models/layers.h"

#include "engine/ops/convert.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/pooling.h"
#include "engine/ops/rope.h"

namespace stamen::engine::layers {

Tensor Slots::Get(DataType type, const Shape& shape) {
  const size_t slot = next_++;
  if (!status_.ok()) return Tensor();
  auto buffer = workspace_->Get(slot, type, shape);
  if (!buffer.ok()) {
    status_ = buffer.status();
    return Tensor();
  }
  return std::move(buffer.value());
}

Status SelfAttention(const AttentionWeights& weights, const AttentionSettings& settings, const Tensor& input,
                     const Tensor& cu_seqlens, Slots slots, Tensor& output, bool accumulate) {
  const int64_t tokens = input.dim(0);
  const ops::QkvLayout& layout = settings.layout;
  const DataType type = input.dtype();
  Tensor qkv = slots.Get(type, {tokens, layout.row_size()});
  Tensor context = slots.Get(type, {tokens, layout.num_heads * layout.head_dim});
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(ops::Gemm(input, weights.qkv_weight, weights.qkv_bias, qkv));
  if (!weights.query_norm.empty()) {
    STAMEN_RETURN_IF_ERROR(ops::RmsNormHeads(qkv, layout, weights.query_norm, weights.key_norm, settings.norm_eps));
  }
  if (settings.rope != nullptr) STAMEN_RETURN_IF_ERROR(ops::ApplyRope(qkv, layout, *settings.rope));
  STAMEN_RETURN_IF_ERROR(ops::Attention(qkv, cu_seqlens, layout, settings.options, context));
  return ops::Gemm(context, weights.output_weight, weights.output_bias, output, {.accumulate = accumulate});
}

Status FeedForward(const FeedForwardWeights& weights, const FeedForwardSettings& settings, const Tensor& input,
                   Slots slots, Tensor& output, bool accumulate) {
  const int64_t tokens = input.dim(0);
  const DataType type = input.dtype();
  const int64_t width = settings.intermediate_size;
  if (!settings.gated) {
    Tensor intermediate = slots.Get(type, {tokens, width});
    STAMEN_RETURN_IF_ERROR(slots.status());
    STAMEN_RETURN_IF_ERROR(
        ops::Gemm(input, weights.up_weight, weights.up_bias, intermediate, {.activation = settings.activation}));
    return ops::Gemm(intermediate, weights.down_weight, weights.down_bias, output, {.accumulate = accumulate});
  }
  Tensor gate_up = slots.Get(type, {tokens, 2 * width});
  Tensor activated = slots.Get(type, {tokens, width});
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(ops::Gemm(input, weights.up_weight, weights.up_bias, gate_up));
  STAMEN_RETURN_IF_ERROR(ops::GatedActivation(settings.activation, gate_up, activated));
  return ops::Gemm(activated, weights.down_weight, weights.down_bias, output, {.accumulate = accumulate});
}

Status PostNormLayer(const PostNormLayerWeights& weights, const AttentionSettings& attention,
                     const FeedForwardSettings& feed_forward, float norm_eps, const Tensor& cu_seqlens, Slots slots,
                     Tensor& hidden) {
  Tensor projected = slots.Get(hidden.dtype(), hidden.shape());
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(SelfAttention(weights.attention, attention, hidden, cu_seqlens, slots.Nested(), projected,
                                       /*accumulate=*/false));
  STAMEN_RETURN_IF_ERROR(ops::LayerNorm(projected, hidden, weights.attention_norm_gamma, weights.attention_norm_beta,
                                        norm_eps, hidden));
  STAMEN_RETURN_IF_ERROR(
      FeedForward(weights.feed_forward, feed_forward, hidden, slots.Nested(), projected, /*accumulate=*/false));
  return ops::LayerNorm(projected, hidden, weights.output_norm_gamma, weights.output_norm_beta, norm_eps, hidden);
}

StatusOr<Tensor> Classify(const ClassifierWeights& weights, const ClassifierSettings& settings, const Tensor& hidden,
                          const Tensor& cu_seqlens, Slots slots) {
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  const int64_t width = hidden.dim(1);
  const DataType type = hidden.dtype();
  Tensor pooled = slots.Get(DataType::kF32, {sequences, width});
  Tensor pooled_typed = slots.Get(type, {sequences, width});
  Tensor dense = slots.Get(type, {sequences, width});
  Tensor logits = slots.Get(type, {sequences, settings.num_labels});
  STAMEN_RETURN_IF_ERROR(slots.status());
  // Pooling yields F32 on every device; the head's gemms run in the compute type.
  STAMEN_RETURN_IF_ERROR(ops::Pool(hidden, cu_seqlens, settings.pooling, pooled));
  if (type != DataType::kF32) {
    STAMEN_RETURN_IF_ERROR(ops::Convert(pooled, pooled_typed));
    pooled = pooled_typed;
  }
  STAMEN_RETURN_IF_ERROR(
      ops::Gemm(pooled, weights.dense_weight, weights.dense_bias, dense, {.activation = settings.activation}));
  if (!weights.norm_gamma.empty()) {
    STAMEN_RETURN_IF_ERROR(ops::LayerNorm(dense, Tensor(), weights.norm_gamma, weights.norm_beta, settings.norm_eps, dense));
  }
  STAMEN_RETURN_IF_ERROR(ops::Gemm(dense, weights.output_weight, weights.output_bias, logits));
  return logits;
}

}  // namespace stamen::engine::layers
