// JinaBERT (jina-embeddings-v2-small/base-en and its language pairs, jina-reranker-v1-turbo/tiny-en),
// as jinaai/jina-bert-implementation's remote code (modeling_bert.py: JinaBertModel,
// JinaBertForSequenceClassification) computes it; transformers has no JinaBERT of its own. With
// x the hidden state [T, H]:
//   x = LayerNorm(word[id] + token_type[type])                          no position embeddings
//   per layer:  x = LayerNorm(x + Attention(x·W_qkvᵀ + b_qkv; ALiBi)·W_oᵀ + b_o)
//               x = LayerNorm(x + (act(x·W_gateᵀ) ⊙ x·W_upᵀ)·W_woᵀ + b_wo)   (JinaBertGLUMLP)
// ALiBi adds −slope_h · |i − j| to each scaled score (ops::AlibiBias, the remote code's
// symmetric encoder form); gated_layers holds the gate rows, then the up rows (its forward
// activates the first half), without a bias; its LayerNorm is the MLP's own "layernorm".
// The reranker: logits = classifier(tanh(pooler.dense(x_cls))), as BERT's.
//
// jina-embeddings-v2-base-code's jinaai/jina-bert-v2-qk-post-norm (config.qk_post_norm) runs
// each layer otherwise, in the layer order read from three sources that agree: a transformers-style
// port of that code for jina-embeddings-v2-base-code (JinaBertSelfAttention, JinaBertLayer,
// JinaBertGLUMLP), text-embeddings-inference's jina_code.rs and rtp-llm's JinaBERT weights:
//   q = LN_q(x·W_qᵀ + b_q),  k = LN_k(x·W_kᵀ + b_k)        the whole H-wide rows, before the heads split
//   a = LayerNorm(x + Attention(q, k, v; ALiBi)·W_oᵀ + b_o)   attention.output.LayerNorm (BertSelfOutput)
//   h = LN_1(x + a)                                         layer_norm_1: the layer's input added again
//   x = LN_2(h + (h·W_upᵀ ⊙ act(h·W_gateᵀ))·W_downᵀ + b_down)   layer_norm_2
// up_gated_layer stores the up rows first, then the gate rows (its forward activates the second
// half), without a bias; the MLP has no norm of its own. Every norm has a bias and layer_norm_eps.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/ops/norm.h"

namespace stamen::engine {
namespace {

struct NormWeights {
  Tensor gamma, beta;
};

struct JinaBertWeights {
  layers::AbsoluteEmbeddingWeights embeddings;  // no position table
  // qk-post-norm: attention_norm is attention.output.LayerNorm, output_norm layer_norm_2 and the
  // attention's query / key LayerNorms are layer_norm_q / layer_norm_k.
  std::vector<layers::PostNormLayerWeights> layers;
  std::vector<NormWeights> layer_norm_1;  // qk-post-norm's, one per layer; empty otherwise
  layers::ClassifierWeights head;  // the reranker's, or the unread pooler
  ops::AlibiBias alibi;            // not a tensor of the folder: made at load
};

void VisitNorm(TensorVisitor& visit, const std::string& name, int64_t size, Tensor& gamma, Tensor& beta) {
  visit.Tensor(gamma, {name + ".weight", {size}, TensorInit::kNormOne});
  visit.Tensor(beta, {name + ".bias", {size}});
}

void VisitTensors(const ModelConfig& config, const std::string& prefix, JinaBertWeights& weights,
                  TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  const int64_t ffn = config.intermediate_size;
  layers::AbsoluteEmbeddingWeights& embeddings = weights.embeddings;
  visit.Tensor(embeddings.word, {prefix + "embeddings.word_embeddings.weight", {config.vocab_size, h}});
  visit.Tensor(embeddings.token_type, {prefix + "embeddings.token_type_embeddings.weight", {config.type_vocab_size, h}});
  VisitNorm(visit, prefix + "embeddings.LayerNorm", h, embeddings.norm_gamma, embeddings.norm_beta);
  weights.layers.resize(config.num_hidden_layers);
  if (config.qk_post_norm) weights.layer_norm_1.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    layers::PostNormLayerWeights& layer = weights.layers[i];
    const std::string base = prefix + "encoder.layer." + std::to_string(i) + ".";
    const std::string self = base + "attention.self.";
    const TensorSpec qkv[] = {{self + "query.weight", {h, h}}, {self + "key.weight", {h, h}},
                              {self + "value.weight", {h, h}}};
    const TensorSpec qkv_bias[] = {{self + "query.bias", {h}}, {self + "key.bias", {h}}, {self + "value.bias", {h}}};
    visit.Stacked(layer.attention.qkv_weight, qkv);
    visit.Stacked(layer.attention.qkv_bias, qkv_bias);
    visit.Tensor(layer.attention.output_weight, {base + "attention.output.dense.weight", {h, h}});
    visit.Tensor(layer.attention.output_bias, {base + "attention.output.dense.bias", {h}});
    VisitNorm(visit, base + "attention.output.LayerNorm", h, layer.attention_norm_gamma, layer.attention_norm_beta);
    if (!config.qk_post_norm) {
      visit.Tensor(layer.feed_forward.up_weight, {base + "mlp.gated_layers.weight", {2 * ffn, h}});
      visit.Tensor(layer.feed_forward.down_weight, {base + "mlp.wo.weight", {h, ffn}});
      visit.Tensor(layer.feed_forward.down_bias, {base + "mlp.wo.bias", {h}});
      VisitNorm(visit, base + "mlp.layernorm", h, layer.output_norm_gamma, layer.output_norm_beta);
      continue;
    }
    layers::AttentionWeights& attention = layer.attention;
    VisitNorm(visit, self + "layer_norm_q", h, attention.query_layer_norm_gamma, attention.query_layer_norm_beta);
    VisitNorm(visit, self + "layer_norm_k", h, attention.key_layer_norm_gamma, attention.key_layer_norm_beta);
    VisitNorm(visit, base + "layer_norm_1", h, weights.layer_norm_1[i].gamma, weights.layer_norm_1[i].beta);
    // Stored up|gate; ops::GatedActivation reads gate|up.
    visit.Tensor(layer.feed_forward.up_weight, {.name = base + "mlp.up_gated_layer.weight",
                                                .shape = {2 * ffn, h},
                                                .swap_row_halves = true});
    visit.Tensor(layer.feed_forward.down_weight, {base + "mlp.down_layer.weight", {h, ffn}});
    visit.Tensor(layer.feed_forward.down_bias, {base + "mlp.down_layer.bias", {h}});
    VisitNorm(visit, base + "layer_norm_2", h, layer.output_norm_gamma, layer.output_norm_beta);
  }
  if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, weights.head, prefix + "pooler.dense", "classifier", h, config.num_labels);
  } else {
    layers::VisitUnreadPooler(visit, weights.head, prefix + "pooler.dense", h);
  }
}

// A qk-post-norm layer (the header's second form); the q/k LayerNorms run inside SelfAttention.
Status QkPostNormLayer(const layers::PostNormLayerWeights& weights, const NormWeights& layer_norm_1,
                       const layers::AttentionSettings& attention, const layers::FeedForwardSettings& feed_forward,
                       float eps, const Tensor& cu_seqlens, layers::Slots slots, Tensor& hidden) {
  Tensor projected = slots.Get(hidden.dtype(), hidden.shape());
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(layers::SelfAttention(weights.attention, attention, hidden, cu_seqlens, slots.Nested(),
                                               projected, /*accumulate=*/false));
  // BertSelfOutput's residual and norm, then JinaBertLayer's own: the input is added twice.
  STAMEN_RETURN_IF_ERROR(ops::LayerNorm(projected, hidden, weights.attention_norm_gamma, weights.attention_norm_beta,
                                        eps, projected));
  STAMEN_RETURN_IF_ERROR(ops::LayerNorm(projected, hidden, layer_norm_1.gamma, layer_norm_1.beta, eps, hidden));
  STAMEN_RETURN_IF_ERROR(layers::FeedForward(weights.feed_forward, feed_forward, hidden, slots.Nested(), projected,
                                             /*accumulate=*/false));
  return ops::LayerNorm(projected, hidden, weights.output_norm_gamma, weights.output_norm_beta, eps, hidden);
}

class JinaBertModel final : public layers::ClassifierEncoderModel<JinaBertWeights> {
 public:
  using ClassifierEncoderModel::ClassifierEncoderModel;
  StatusOr<Tensor> Forward(const ModelInput& input) override;
};

StatusOr<Tensor> JinaBertModel::Forward(const ModelInput& input) {
  layers::Slots slots(workspace_);
  Tensor hidden = slots.Get(placement_.dtype, {input.token_ids.dim(0), config_.hidden_size});
  STAMEN_RETURN_IF_ERROR(slots.status());
  const float eps = static_cast<float>(config_.norm_eps);
  // Without a position table, EmbedAbsolute adds the token types alone.
  STAMEN_RETURN_IF_ERROR(layers::EmbedAbsolute(weights_.embeddings, input, 0, eps, slots.Nested(), hidden));
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim},
      .options = {.alibi = &weights_.alibi},
      .norm_eps = eps};  // qk-post-norm's layer_norm_q / layer_norm_k
  const layers::FeedForwardSettings feed_forward{
      .activation = config_.hidden_act, .gated = true, .intermediate_size = config_.intermediate_size};
  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    const layers::PostNormLayerWeights& layer = weights_.layers[i];
    STAMEN_RETURN_IF_ERROR(
        config_.qk_post_norm
            ? QkPostNormLayer(layer, weights_.layer_norm_1[i], attention, feed_forward, eps, input.cu_seqlens,
                              slots.Nested(), hidden)
            : layers::PostNormLayer(layer, attention, feed_forward, eps, input.cu_seqlens, slots.Nested(), hidden));
  }
  return hidden;
}

constexpr std::string_view kPrefixes[] = {"", "bert."};

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  auto model = LoadSchemaModel<JinaBertModel, VisitTensors>(config, weights, placement);
  if (!model.ok()) return model.status();
  // The slopes stay F32 on every device (ops::AlibiBias).
  const std::vector<float> slopes = ops::AlibiSlopes(config.num_attention_heads);
  auto host = Tensor::Allocate(DataType::kF32, {config.num_attention_heads});
  if (!host.ok()) return host.status();
  std::copy(slopes.begin(), slopes.end(), host->data<float>());
  auto placed = model_weights::Place(*host, {.device = placement.device, .dtype = DataType::kF32});
  if (!placed.ok()) return placed.status();
  static_cast<JinaBertModel&>(**model).weights_.alibi.slopes = std::move(placed.value());
  return model;
}

}  // namespace

extern const FamilyDefinition kJinaBertFamily{.weight_prefixes = kPrefixes,
                                              .tensors = SchemaTensors<JinaBertWeights, VisitTensors>,
                                              .load = Load};

}  // namespace stamen::engine
