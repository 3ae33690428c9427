// DistilBERT encoders (the msmarco / multi-qa bi-encoders) and their sequence-classification
// heads (sentiment, NLI). BERT's post-LayerNorm layer under other names and config keys
// (dim, n_layers, n_heads, hidden_dim, activation), with learned positions from 0 and no
// token types. The head: ReLU(pre_classifier(x_cls)), then classifier.
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/ops/embedding.h"
#include "engine/ops/norm.h"

namespace stamen::engine {
namespace {

struct DistilBertWeights {
  Tensor word_embeddings, position_embeddings;
  Tensor embedding_norm_gamma, embedding_norm_beta;
  std::vector<layers::PostNormLayerWeights> layers;
  layers::ClassifierWeights head;
};

void VisitTensors(const ModelConfig& config, const std::string& prefix, DistilBertWeights& weights,
                  TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  const int64_t ffn = config.intermediate_size;
  const std::string embeddings = prefix + "embeddings.";
  visit.Tensor(weights.word_embeddings, {embeddings + "word_embeddings.weight", {config.vocab_size, h}});
  visit.Tensor(weights.position_embeddings,
               {embeddings + "position_embeddings.weight", {config.max_position_embeddings, h}});
  visit.Tensor(weights.embedding_norm_gamma, {embeddings + "LayerNorm.weight", {h}, TensorInit::kNormOne});
  visit.Tensor(weights.embedding_norm_beta, {embeddings + "LayerNorm.bias", {h}});
  weights.layers.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    layers::PostNormLayerWeights& layer = weights.layers[i];
    const std::string base = prefix + "transformer.layer." + std::to_string(i) + ".";
    const std::string attention = base + "attention.";
    const TensorSpec qkv[] = {{attention + "q_lin.weight", {h, h}}, {attention + "k_lin.weight", {h, h}},
                              {attention + "v_lin.weight", {h, h}}};
    const TensorSpec qkv_bias[] = {{attention + "q_lin.bias", {h}}, {attention + "k_lin.bias", {h}},
                                   {attention + "v_lin.bias", {h}}};
    visit.Stacked(layer.attention.qkv_weight, qkv);
    visit.Stacked(layer.attention.qkv_bias, qkv_bias);
    visit.Tensor(layer.attention.output_weight, {attention + "out_lin.weight", {h, h}});
    visit.Tensor(layer.attention.output_bias, {attention + "out_lin.bias", {h}});
    visit.Tensor(layer.attention_norm_gamma, {base + "sa_layer_norm.weight", {h}, TensorInit::kNormOne});
    visit.Tensor(layer.attention_norm_beta, {base + "sa_layer_norm.bias", {h}});
    visit.Tensor(layer.feed_forward.up_weight, {base + "ffn.lin1.weight", {ffn, h}});
    visit.Tensor(layer.feed_forward.up_bias, {base + "ffn.lin1.bias", {ffn}});
    visit.Tensor(layer.feed_forward.down_weight, {base + "ffn.lin2.weight", {h, ffn}});
    visit.Tensor(layer.feed_forward.down_bias, {base + "ffn.lin2.bias", {h}});
    visit.Tensor(layer.output_norm_gamma, {base + "output_layer_norm.weight", {h}, TensorInit::kNormOne});
    visit.Tensor(layer.output_norm_beta, {base + "output_layer_norm.bias", {h}});
  }
  if (config.head == ModelHead::kSequenceClassification) {
    const int64_t labels = config.num_labels;
    visit.Tensor(weights.head.dense_weight, {"pre_classifier.weight", {h, h}});
    visit.Tensor(weights.head.dense_bias, {"pre_classifier.bias", {h}});
    visit.Tensor(weights.head.output_weight, {"classifier.weight", {labels, h}});
    visit.Tensor(weights.head.output_bias, {"classifier.bias", {labels}});
  }
}

enum Slot : size_t { kHidden, kPositions, kLayerSlots };

class DistilBertModel final : public Model {
 public:
  DistilBertModel(const ModelConfig& config, const Placement& placement) : Model(placement), config_(config) {}
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden) override;
  int64_t max_sequence_length() const override { return config_.max_position_embeddings; }

  ModelConfig config_;
  DistilBertWeights weights_;

 private:
  Status RunLayer(const layers::PostNormLayerWeights& layer, const ModelInput& input, Tensor& hidden);
};

Status DistilBertModel::RunLayer(const layers::PostNormLayerWeights& layer, const ModelInput& input, Tensor& hidden) {
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim}, .options = {}};
  const layers::FeedForwardSettings feed_forward{.activation = config_.hidden_act,
                                                 .intermediate_size = config_.intermediate_size};
  return layers::PostNormLayer(layer, attention, feed_forward, static_cast<float>(config_.norm_eps), input.cu_seqlens,
                               layers::Slots(workspace_, kLayerSlots), hidden);
}

StatusOr<Tensor> DistilBertModel::Forward(const ModelInput& input) {
  const int64_t tokens = input.token_ids.dim(0);
  layers::Slots slots(workspace_, kHidden);
  Tensor hidden = slots.Get(placement_.dtype, {tokens, config_.hidden_size});
  Tensor positions = slots.Get(DataType::kI32, {tokens});
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, 0, positions));
  STAMEN_RETURN_IF_ERROR(ops::Gather(weights_.word_embeddings, input.token_ids, hidden));
  STAMEN_RETURN_IF_ERROR(ops::Gather(weights_.position_embeddings, positions, hidden, /*accumulate=*/true));
  STAMEN_RETURN_IF_ERROR(ops::LayerNorm(hidden, Tensor(), weights_.embedding_norm_gamma, weights_.embedding_norm_beta,
                                        static_cast<float>(config_.norm_eps), hidden));
  for (const layers::PostNormLayerWeights& layer : weights_.layers) STAMEN_RETURN_IF_ERROR(RunLayer(layer, input, hidden));
  return hidden;
}

StatusOr<Tensor> DistilBertModel::Classify(const ModelInput& input, const Tensor& hidden) {
  if (config_.head != ModelHead::kSequenceClassification) return Model::Classify(input, hidden);
  const layers::ClassifierSettings head{.activation = ops::Activation::kRelu, .num_labels = config_.num_labels};
  return layers::Classify(weights_.head, head, hidden, input.cu_seqlens, layers::Slots(workspace_, kLayerSlots));
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  if (config.head_dim * config.num_attention_heads != config.hidden_size) {
    return Status::Error("DistilBERT needs dim to be a multiple of n_heads");
  }
  auto model = std::make_unique<DistilBertModel>(config, placement);
  STAMEN_RETURN_IF_ERROR(LoadTensors<DistilBertWeights>(config, weights, placement, VisitTensors, model->weights_));
  return std::unique_ptr<Model>(std::move(model));
}

std::vector<TensorSpec> Tensors(const ModelConfig& config, const std::string& prefix) {
  return CollectTensors<DistilBertWeights>(config, prefix, VisitTensors);
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "activation", "gelu", config));
  config->norm_eps = 1e-12;  // fixed in transformers' DistilBERT, not a config key
  // Sinusoidal position tables are saved as weights too, so both kinds load alike.
  return Status();
}

constexpr std::string_view kPrefixes[] = {"", "distilbert."};

constexpr ArchitectureDefinition kArchitectures[] = {
    {"DistilBertModel", ModelHead::kNone, "", "distilbert"},
    {"DistilBertForSequenceClassification", ModelHead::kSequenceClassification, "distilbert.", ""},
};

}  // namespace

extern const FamilyDefinition kDistilBertFamily{
    .family = ModelFamily::kDistilBert,
    .architectures = kArchitectures,
    .shape_keys = {.hidden_size = "dim",
                   .num_hidden_layers = "n_layers",
                   .num_attention_heads = "n_heads",
                   .intermediate_size = "hidden_dim"},
    .weight_prefixes = kPrefixes,
    .prefix_probe = "embeddings.word_embeddings.weight",
    .read_settings = ReadSettings,
    .tensors = Tensors,
    .load = Load,
};

}  // namespace stamen::engine
