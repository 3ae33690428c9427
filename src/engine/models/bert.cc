// BERT, RoBERTa and XLM-RoBERTa encoders (post-LayerNorm transformer, learned absolute
// positions, token-type embeddings), and their sequence-classification heads.
//
// Per layer, with x the hidden state [T, H]:
//   qkv = x·W_qkvᵀ + b_qkv                 (query, key and value projections as one gemm)
//   x   = LayerNorm(x + (Attention(qkv)·W_oᵀ + b_o))
//   x   = LayerNorm(x + (gelu(x·W_iᵀ + b_i)·W_o2ᵀ + b_o2))
// Heads: BERT pools with tanh(pooler.dense(x_cls)) then `classifier`; RoBERTa applies
// tanh(classifier.dense(x_cls)) then `classifier.out_proj` — the same shape of computation.
// …ForMaskedLM adds the masked-LM head (masked_lm_head.h), used for SPLADE vectors.
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/models/masked_lm_head.h"

namespace stamen::engine {
namespace {

struct BertWeights {
  layers::AbsoluteEmbeddingWeights embeddings;
  std::vector<layers::PostNormLayerWeights> layers;
  layers::ClassifierWeights head;
  layers::MaskedLmHeadWeights masked_lm;
};

const layers::PostNormLayerNames kLayerNames = {
    .query = "attention.self.query",
    .key = "attention.self.key",
    .value = "attention.self.value",
    .output = "attention.output.dense",
    .attention_norm = "attention.output.LayerNorm",
    .up = "intermediate.dense",
    .down = "output.dense",
    .output_norm = "output.LayerNorm",
};

// The tensor schema: every weight, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, BertWeights& weights, TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  layers::VisitAbsoluteEmbeddings(visit, weights.embeddings, prefix + "embeddings.", config);
  layers::VisitPostNormLayers(visit, weights.layers, prefix + "encoder.layer.", kLayerNames, config);
  layers::ClassifierWeights& head = weights.head;
  const int64_t labels = config.num_labels;
  if (config.head == ModelHead::kSequenceClassification && config.family == ModelFamily::kBert) {
    layers::VisitClassifier(visit, head, prefix + "pooler.dense", "classifier", h, labels);
  } else if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, head, "classifier.dense", "classifier.out_proj", h, labels);
  } else if (config.head == ModelHead::kMaskedLm && config.family == ModelFamily::kBert) {
    layers::VisitMaskedLmHead(visit, weights.masked_lm,
                              {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                               "cls.predictions.decoder", "cls.predictions.bias"},
                              config);
  } else if (config.head == ModelHead::kMaskedLm) {
    layers::VisitMaskedLmHead(visit, weights.masked_lm, {"lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias"},
                              config);
  } else {
    // BertModel and XLMRobertaModel save their pooler too; embeddings never use it.
    visit.Tensor(head.dense_weight, {prefix + "pooler.dense.weight", {h, h}, TensorInit::kNormal, TensorPresence::kUnread});
    visit.Tensor(head.dense_bias, {prefix + "pooler.dense.bias", {h}, TensorInit::kNormal, TensorPresence::kUnread});
  }
}

// Workspace slots of a step: the hidden state and embedding inputs, then the layers' own.
enum Slot : size_t { kHidden, kEmbeddingSlots, kLayerSlots = kEmbeddingSlots + 2 };

class BertModel final : public Model {
 public:
  static StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                                const Placement& placement);
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden) override;
  Status SpladeVectors(const ModelInput& input, const Tensor& hidden, Tensor& output) override;
  int64_t splade_width() const override { return config_.head == ModelHead::kMaskedLm ? config_.vocab_size : 0; }
  int64_t max_sequence_length() const override { return config_.max_position_embeddings - config_.position_offset; }

 private:
  BertModel(const ModelConfig& config, const Placement& placement) : Model(placement), config_(config) {}
  Status RunLayer(const layers::PostNormLayerWeights& layer, const ModelInput& input, Tensor& hidden);

  ModelConfig config_;
  BertWeights weights_;
};

StatusOr<std::unique_ptr<Model>> BertModel::Load(const ModelConfig& config, const WeightStore& weights,
                                                 const Placement& placement) {
  if (config.num_key_value_heads != config.num_attention_heads ||
      config.head_dim * config.num_attention_heads != config.hidden_size) {
    return Status::Error("BERT-style encoders need head_dim × num_attention_heads = hidden_size and no grouped heads");
  }
  std::unique_ptr<BertModel> model(new BertModel(config, placement));
  STAMEN_RETURN_IF_ERROR(LoadTensors<BertWeights>(config, weights, placement, VisitTensors, model->weights_));
  return std::unique_ptr<Model>(std::move(model));
}

Status BertModel::RunLayer(const layers::PostNormLayerWeights& layer, const ModelInput& input, Tensor& hidden) {
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim}, .options = {}};
  const layers::FeedForwardSettings feed_forward{.activation = config_.hidden_act,
                                                 .intermediate_size = config_.intermediate_size};
  return layers::PostNormLayer(layer, attention, feed_forward, static_cast<float>(config_.norm_eps), input.cu_seqlens,
                               layers::Slots(workspace_, kLayerSlots), hidden);
}

StatusOr<Tensor> BertModel::Forward(const ModelInput& input) {
  auto hidden = workspace_.Get(kHidden, placement_.dtype, {input.token_ids.dim(0), config_.hidden_size});
  if (!hidden.ok()) return hidden.status();
  STAMEN_RETURN_IF_ERROR(layers::EmbedAbsolute(weights_.embeddings, input, config_.position_offset,
                                               static_cast<float>(config_.norm_eps),
                                               layers::Slots(workspace_, kEmbeddingSlots), *hidden));
  for (const layers::PostNormLayerWeights& layer : weights_.layers) STAMEN_RETURN_IF_ERROR(RunLayer(layer, input, *hidden));
  return hidden;
}

StatusOr<Tensor> BertModel::Classify(const ModelInput& input, const Tensor& hidden) {
  if (config_.head != ModelHead::kSequenceClassification) return Model::Classify(input, hidden);
  const layers::ClassifierSettings head{.activation = ops::Activation::kTanh, .num_labels = config_.num_labels};
  return layers::Classify(weights_.head, head, hidden, input.cu_seqlens, layers::Slots(workspace_, kLayerSlots));
}

Status BertModel::SpladeVectors(const ModelInput& input, const Tensor& hidden, Tensor& output) {
  if (config_.head != ModelHead::kMaskedLm) return Model::SpladeVectors(input, hidden, output);
  // BERT's transform uses hidden_act; RoBERTa's lm_head is always erf-GELU.
  const layers::MaskedLmHeadSettings head{
      .activation = config_.family == ModelFamily::kBert ? config_.hidden_act : ops::Activation::kGeluErf,
      .norm_eps = static_cast<float>(config_.norm_eps)};
  return layers::SpladeVectors(weights_.masked_lm, head, weights_.embeddings.word, input, hidden,
                               layers::Slots(workspace_, kLayerSlots), output);
}

std::vector<TensorSpec> Tensors(const ModelConfig& config, const std::string& prefix) {
  return CollectTensors<BertWeights>(config, prefix, VisitTensors);
}

// Settings of BERT-style encoders.
Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "gelu", config));
  config->norm_eps = 1e-12;
  STAMEN_RETURN_IF_ERROR(root.Optional("layer_norm_eps", &config->norm_eps));
  config->type_vocab_size = 2;
  STAMEN_RETURN_IF_ERROR(root.Optional("type_vocab_size", &config->type_vocab_size));
  if (config->type_vocab_size < 1) return root.Error("type_vocab_size", "must be positive");
  std::string position_type = "absolute";
  STAMEN_RETURN_IF_ERROR(root.Optional("position_embedding_type", &position_type));
  if (position_type != "absolute") {
    return root.Error("position_embedding_type", "is '" + position_type + "'; only 'absolute' is supported");
  }
  return Status();
}

Status ReadRobertaSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(ReadSettings(root, config));
  return family_settings::ReadPositionsAfterPad(root, config);
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  return BertModel::Load(config, weights, placement);
}

constexpr std::string_view kPrefixes[] = {"", "bert.", "roberta.", "model."};

constexpr ArchitectureDefinition kBertArchitectures[] = {
    {"BertModel", ModelHead::kNone, "", "bert"},
    {"BertForSequenceClassification", ModelHead::kSequenceClassification, "bert.", ""},
    {"BertForMaskedLM", ModelHead::kMaskedLm, "bert.", ""},
};

constexpr ArchitectureDefinition kRobertaArchitectures[] = {
    {"XLMRobertaModel", ModelHead::kNone, "", "xlm-roberta"},
    {"XLMRobertaForSequenceClassification", ModelHead::kSequenceClassification, "roberta.", ""},
    {"XLMRobertaForMaskedLM", ModelHead::kMaskedLm, "roberta.", ""},
    {"RobertaModel", ModelHead::kNone, "", "roberta"},
    {"RobertaForSequenceClassification", ModelHead::kSequenceClassification, "roberta.", ""},
    {"RobertaForMaskedLM", ModelHead::kMaskedLm, "roberta.", ""},
    // CamemBERT is RoBERTa with its own vocabulary.
    {"CamembertModel", ModelHead::kNone, "", "camembert"},
    {"CamembertForSequenceClassification", ModelHead::kSequenceClassification, "roberta.", ""},
};

// BERT and RoBERTa differ in their architectures and in how positions count.
constexpr FamilyDefinition EncoderFamily(ModelFamily family, std::span<const ArchitectureDefinition> architectures,
                                         Status (*read_settings)(const JsonObject&, ModelConfig*)) {
  return {.family = family,
          .architectures = architectures,
          .shape_keys = {},
          .weight_prefixes = kPrefixes,
          .prefix_probe = "embeddings.word_embeddings.weight",
          .read_settings = read_settings,
          .tensors = Tensors,
          .load = Load};
}

}  // namespace

extern const FamilyDefinition kBertFamily = EncoderFamily(ModelFamily::kBert, kBertArchitectures, ReadSettings);
extern const FamilyDefinition kRobertaFamily =
    EncoderFamily(ModelFamily::kRoberta, kRobertaArchitectures, ReadRobertaSettings);

}  // namespace stamen::engine
