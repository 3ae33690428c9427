// DistilBERT encoders (the msmarco / multi-qa bi-encoders) and their sequence-classification
// heads (sentiment, NLI). BERT's post-LayerNorm layer under other names and config keys
// (dim, n_layers, n_heads, hidden_dim, activation), with learned positions from 0 and no
// token types. The head: ReLU(pre_classifier(x_cls)), then classifier.
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

struct DistilBertWeights {
  layers::AbsoluteEmbeddingWeights embeddings;
  std::vector<layers::PostNormLayerWeights> layers;
  layers::ClassifierWeights head;
};

const layers::PostNormLayerNames kLayerNames = {
    .query = "attention.q_lin",
    .key = "attention.k_lin",
    .value = "attention.v_lin",
    .output = "attention.out_lin",
    .attention_norm = "sa_layer_norm",
    .up = "ffn.lin1",
    .down = "ffn.lin2",
    .output_norm = "output_layer_norm",
};

// The tensor schema: every weight, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, DistilBertWeights& weights,
                  TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  layers::VisitAbsoluteEmbeddings(visit, weights.embeddings, prefix + "embeddings.", config);
  layers::VisitPostNormLayers(visit, weights.layers, prefix + "transformer.layer.", kLayerNames, config);
  if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, weights.head, "pre_classifier", "classifier", h, config.num_labels);
  }
}

enum Slot : size_t { kHidden, kEmbeddingSlots, kLayerSlots = kEmbeddingSlots + 2 };

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
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(layers::EmbedAbsolute(weights_.embeddings, input, /*position_offset=*/0,
                                               static_cast<float>(config_.norm_eps), slots.Nested(), hidden));
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
