// ModernBERT encoders (gte-modernbert-base, modernbert-embed-base) and their
// sequence-classification heads (gte-reranker-modernbert-base), as transformers'
// modeling_modernbert.py computes them. With x the hidden state [T, H]:
//   x = LayerNorm(tok_embeddings[ids])                     no position embeddings
//   per layer:  x += Attention(rotate(attn_norm(x)·W_qkvᵀ))·W_oᵀ     layer 0's attn_norm is Identity
//               x += (act(n·W_inputᵀ) ⊙ n·W_gateᵀ)·W_oᵀ,  n = mlp_norm(x)
//   x = final_norm(x)
// Layers are global (every key, RoPE base global_rope_theta) or local (|i − j| ≤
// local_attention / 2, base local_rope_theta), by layer_types or every
// global_attn_every_n_layers-th layer from layer 0. No biases unless attention_bias, mlp_bias or
// norm_bias say so. The head pools the first token or the mean, then
// classifier(norm(act(dense(pooled)))).
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/ops/norm.h"

namespace stamen::engine {
namespace {

struct ModernBertLayer {
  Tensor attention_norm_gamma, attention_norm_beta;  // empty on layer 0 (Identity)
  layers::AttentionWeights attention;
  Tensor feed_forward_norm_gamma, feed_forward_norm_beta;
  layers::FeedForwardWeights feed_forward;
};

struct ModernBertWeights {
  Tensor token_embeddings;
  Tensor embedding_norm_gamma, embedding_norm_beta;
  std::vector<ModernBertLayer> layers;
  Tensor final_norm_gamma, final_norm_beta;
  layers::ClassifierWeights head;
};

// A LayerNorm's weight and, when norm_bias, its bias.
void VisitNorm(const ModelConfig& config, const std::string& name, Tensor& gamma, Tensor& beta, TensorVisitor& visit) {
  visit.Tensor(gamma, {name + ".weight", {config.hidden_size}, TensorInit::kNormOne});
  if (config.norm_bias) visit.Tensor(beta, {name + ".bias", {config.hidden_size}});
}

// A linear layer's weight [rows, columns] and, when `bias`, its bias.
void VisitLinear(const std::string& name, int64_t rows, int64_t columns, bool bias, Tensor& weight, Tensor& bias_target,
                 TensorVisitor& visit) {
  visit.Tensor(weight, {name + ".weight", {rows, columns}});
  if (bias) visit.Tensor(bias_target, {name + ".bias", {rows}});
}

void VisitTensors(const ModelConfig& config, const std::string& prefix, ModernBertWeights& weights,
                  TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  const int64_t ffn = config.intermediate_size;
  visit.Tensor(weights.token_embeddings, {prefix + "embeddings.tok_embeddings.weight", {config.vocab_size, h}});
  VisitNorm(config, prefix + "embeddings.norm", weights.embedding_norm_gamma, weights.embedding_norm_beta, visit);
  weights.layers.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    ModernBertLayer& layer = weights.layers[i];
    const std::string base = prefix + "layers." + std::to_string(i) + ".";
    if (i > 0) VisitNorm(config, base + "attn_norm", layer.attention_norm_gamma, layer.attention_norm_beta, visit);
    // Wqkv's rows are q, k, v, each heads × head_dim: the packed layout ops::Attention reads.
    VisitLinear(base + "attn.Wqkv", 3 * h, h, config.attention_bias, layer.attention.qkv_weight,
                layer.attention.qkv_bias, visit);
    VisitLinear(base + "attn.Wo", h, h, config.attention_bias, layer.attention.output_weight,
                layer.attention.output_bias, visit);
    VisitNorm(config, base + "mlp_norm", layer.feed_forward_norm_gamma, layer.feed_forward_norm_beta, visit);
    // Wi's first half is the activated input, its second the gate: GatedActivation's order.
    VisitLinear(base + "mlp.Wi", 2 * ffn, h, config.feed_forward_bias, layer.feed_forward.up_weight,
                layer.feed_forward.up_bias, visit);
    VisitLinear(base + "mlp.Wo", h, ffn, config.feed_forward_bias, layer.feed_forward.down_weight,
                layer.feed_forward.down_bias, visit);
  }
  VisitNorm(config, prefix + "final_norm", weights.final_norm_gamma, weights.final_norm_beta, visit);
  if (config.head == ModelHead::kSequenceClassification) {
    VisitLinear("head.dense", h, h, config.classifier_bias, weights.head.dense_weight, weights.head.dense_bias, visit);
    VisitNorm(config, "head.norm", weights.head.norm_gamma, weights.head.norm_beta, visit);
    VisitLinear("classifier", config.num_labels, h, /*bias=*/true, weights.head.output_weight, weights.head.output_bias,
                visit);
  }
}

class ModernBertModel final : public layers::ClassifierEncoderModel<ModernBertWeights> {
 public:
  using ClassifierEncoderModel::ClassifierEncoderModel;
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  bool LimitsKeys() const override { return true; }

 private:
  Status RunLayer(const ModernBertLayer& layer, bool sliding, const ModelInput& input, const Tensor& rope,
                  layers::Slots slots, Tensor& hidden);
};

Status ModernBertModel::RunLayer(const ModernBertLayer& layer, bool sliding, const ModelInput& input,
                                 const Tensor& rope, layers::Slots slots, Tensor& hidden) {
  const float eps = static_cast<float>(config_.norm_eps);
  Tensor normed = slots.Get(placement_.dtype, hidden.shape());
  STAMEN_RETURN_IF_ERROR(slots.status());
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim},
      .options = {.window = sliding ? config_.attention_window : 0,
                  .key_lengths = input.key_lengths.empty() ? nullptr : &input.key_lengths},
      .rope = &rope};
  const Tensor* attention_input = &hidden;
  if (!layer.attention_norm_gamma.empty()) {
    STAMEN_RETURN_IF_ERROR(
        ops::LayerNorm(hidden, Tensor(), layer.attention_norm_gamma, layer.attention_norm_beta, eps, normed));
    attention_input = &normed;
  }
  // SelfAttention reads its input into qkv before it writes the output, so layer 0 may
  // accumulate into the hidden state it reads.
  STAMEN_RETURN_IF_ERROR(layers::SelfAttention(layer.attention, attention, *attention_input, input.cu_seqlens,
                                               slots.Nested(), hidden, /*accumulate=*/true));
  STAMEN_RETURN_IF_ERROR(
      ops::LayerNorm(hidden, Tensor(), layer.feed_forward_norm_gamma, layer.feed_forward_norm_beta, eps, normed));
  const layers::FeedForwardSettings feed_forward{
      .activation = config_.hidden_act, .gated = true, .intermediate_size = config_.intermediate_size};
  return layers::FeedForward(layer.feed_forward, feed_forward, normed, slots.Nested(), hidden, /*accumulate=*/true);
}

StatusOr<Tensor> ModernBertModel::Forward(const ModelInput& input) {
  layers::Slots slots(workspace_);
  layers::RopeTables rope;
  auto embedded = layers::EmbedRotary(weights_.token_embeddings, config_, input, slots, rope);
  if (!embedded.ok()) return embedded.status();
  Tensor& hidden = *embedded;
  const float eps = static_cast<float>(config_.norm_eps);
  STAMEN_RETURN_IF_ERROR(
      ops::LayerNorm(hidden, Tensor(), weights_.embedding_norm_gamma, weights_.embedding_norm_beta, eps, hidden));
  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    const bool sliding = config_.sliding_window_layers[i];
    STAMEN_RETURN_IF_ERROR(
        RunLayer(weights_.layers[i], sliding, input, sliding ? rope.sliding : rope.full, slots.Nested(), hidden));
  }
  STAMEN_RETURN_IF_ERROR(
      ops::LayerNorm(hidden, Tensor(), weights_.final_norm_gamma, weights_.final_norm_beta, eps, hidden));
  return hidden;
}

constexpr std::string_view kPrefixes[] = {"", "model."};

}  // namespace

extern const FamilyDefinition kModernBertFamily{
    .weight_prefixes = kPrefixes,
    .tensors = SchemaTensors<ModernBertWeights, VisitTensors>, .load = LoadSchemaModel<ModernBertModel, VisitTensors>};

}  // namespace stamen::engine
