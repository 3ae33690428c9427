// The attention and feed-forward blocks, as sequences of ops.
#include "engine/models/layers.h"

#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
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
  STAMEN_RETURN_IF_ERROR(ops::Attention(qkv, cu_seqlens, layout, settings.causal, context));
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
  if (settings.activation != ops::Activation::kSilu) return Status::Error("gated feed-forward layers support only silu");
  STAMEN_RETURN_IF_ERROR(ops::SiluMul(gate_up, activated));
  return ops::Gemm(activated, weights.down_weight, weights.down_bias, output, {.accumulate = accumulate});
}

}  // namespace stamen::engine::layers
