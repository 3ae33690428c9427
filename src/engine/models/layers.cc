// The attention and feed-forward blocks, as sequences of ops.
#include "engine/models/layers.h"

#include "engine/ops/convert.h"
#include "engine/ops/embedding.h"
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

void VisitAbsoluteEmbeddings(TensorVisitor& visit, AbsoluteEmbeddingWeights& embeddings, const std::string& prefix,
                             const ModelConfig& config) {
  const int64_t h = config.hidden_size;
  visit.Tensor(embeddings.word, {prefix + "word_embeddings.weight", {config.vocab_size, h}});
  visit.Tensor(embeddings.position, {prefix + "position_embeddings.weight", {config.max_position_embeddings, h}});
  if (config.type_vocab_size > 0) {
    visit.Tensor(embeddings.token_type, {prefix + "token_type_embeddings.weight", {config.type_vocab_size, h}});
  }
  visit.Tensor(embeddings.norm_gamma, {prefix + "LayerNorm.weight", {h}, TensorInit::kNormOne});
  visit.Tensor(embeddings.norm_beta, {prefix + "LayerNorm.bias", {h}});
}

Status EmbedAbsolute(const AbsoluteEmbeddingWeights& embeddings, const ModelInput& input, int64_t position_offset,
                     float norm_eps, Slots slots, Tensor& hidden) {
  const int64_t tokens = input.token_ids.dim(0);
  Tensor positions = slots.Get(DataType::kI32, {tokens});
  Tensor zeros = slots.Get(DataType::kI32, {tokens});
  STAMEN_RETURN_IF_ERROR(slots.status());
  // Sequence lengths were checked by the engine (max_sequence_length); positions are made on
  // the device so a captured graph recomputes them for each replayed batch.
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, static_cast<int32_t>(position_offset), positions));
  STAMEN_RETURN_IF_ERROR(ops::Gather(embeddings.word, input.token_ids, hidden));
  STAMEN_RETURN_IF_ERROR(ops::Gather(embeddings.position, positions, hidden, /*accumulate=*/true));
  if (!embeddings.token_type.empty()) {
    Tensor token_types = input.token_type_ids;
    if (token_types.empty()) {
      STAMEN_RETURN_IF_ERROR(ops::Zero(zeros));
      token_types = zeros;
    }
    Status types = ops::Gather(embeddings.token_type, token_types, hidden, /*accumulate=*/true);
    if (!types.ok()) return Status::Error("token type ids: " + types.message());
  }
  return ops::LayerNorm(hidden, Tensor(), embeddings.norm_gamma, embeddings.norm_beta, norm_eps, hidden);
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

void VisitPostNormLayers(TensorVisitor& visit, std::vector<PostNormLayerWeights>& layers,
                         const std::string& layers_prefix, const PostNormLayerNames& names, const ModelConfig& config) {
  const int64_t h = config.hidden_size;
  const int64_t ffn = config.intermediate_size;
  layers.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    PostNormLayerWeights& layer = layers[i];
    const std::string base = layers_prefix + std::to_string(i) + ".";
    const TensorSpec qkv[] = {{base + names.query + ".weight", {h, h}}, {base + names.key + ".weight", {h, h}},
                              {base + names.value + ".weight", {h, h}}};
    const TensorSpec qkv_bias[] = {{base + names.query + ".bias", {h}}, {base + names.key + ".bias", {h}},
                                   {base + names.value + ".bias", {h}}};
    visit.Stacked(layer.attention.qkv_weight, qkv);
    visit.Stacked(layer.attention.qkv_bias, qkv_bias);
    visit.Tensor(layer.attention.output_weight, {base + names.output + ".weight", {h, h}});
    visit.Tensor(layer.attention.output_bias, {base + names.output + ".bias", {h}});
    visit.Tensor(layer.attention_norm_gamma, {base + names.attention_norm + ".weight", {h}, TensorInit::kNormOne});
    visit.Tensor(layer.attention_norm_beta, {base + names.attention_norm + ".bias", {h}});
    visit.Tensor(layer.feed_forward.up_weight, {base + names.up + ".weight", {ffn, h}});
    visit.Tensor(layer.feed_forward.up_bias, {base + names.up + ".bias", {ffn}});
    visit.Tensor(layer.feed_forward.down_weight, {base + names.down + ".weight", {h, ffn}});
    visit.Tensor(layer.feed_forward.down_bias, {base + names.down + ".bias", {h}});
    visit.Tensor(layer.output_norm_gamma, {base + names.output_norm + ".weight", {h}, TensorInit::kNormOne});
    visit.Tensor(layer.output_norm_beta, {base + names.output_norm + ".bias", {h}});
  }
}

void VisitClassifier(TensorVisitor& visit, ClassifierWeights& head, const std::string& dense,
                     const std::string& output, int64_t hidden_size, int64_t num_labels) {
  visit.Tensor(head.dense_weight, {dense + ".weight", {hidden_size, hidden_size}});
  visit.Tensor(head.dense_bias, {dense + ".bias", {hidden_size}});
  visit.Tensor(head.output_weight, {output + ".weight", {num_labels, hidden_size}});
  visit.Tensor(head.output_bias, {output + ".bias", {num_labels}});
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
