// MPNet encoders (all-mpnet-base-v2 and the other MPNet sentence-transformers) and their
// sequence-classification heads. BERT's post-LayerNorm layer with two differences: no token
// types, and a learned relative position bias added to every layer's attention scores — one
// table [32 buckets, heads] for the whole encoder, indexed by T5's bidirectional bucket of the
// key's offset from the query. Absolute positions count from pad_token_id + 1, as RoBERTa's.
// Configs that name MPNetForMaskedLM hold the same encoder (all-mpnet-base-v2 does).
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

// transformers' MPNetEncoder computes buckets with 32 whatever the config says.
constexpr int64_t kBuckets = 32;
constexpr int32_t kMaxDistance = 128;

struct MpnetWeights {
  layers::AbsoluteEmbeddingWeights embeddings;
  std::vector<layers::PostNormLayerWeights> layers;
  Tensor relative_attention_bias;  // [buckets, heads], always F32 (the attention op adds it in F32)
  layers::ClassifierWeights head;
};

const layers::PostNormLayerNames kLayerNames = {
    .query = "attention.attn.q",
    .key = "attention.attn.k",
    .value = "attention.attn.v",
    .output = "attention.attn.o",
    .attention_norm = "attention.LayerNorm",
    .up = "intermediate.dense",
    .down = "output.dense",
    .output_norm = "output.LayerNorm",
};

// The tensor schema: every weight, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, MpnetWeights& weights, TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  layers::VisitAbsoluteEmbeddings(visit, weights.embeddings, prefix + "embeddings.", config);
  layers::VisitPostNormLayers(visit, weights.layers, prefix + "encoder.layer.", kLayerNames, config);
  layers::ClassifierWeights& head = weights.head;
  if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, head, "classifier.dense", "classifier.out_proj", h, config.num_labels);
  } else {
    // MPNetModel saves its pooler; embeddings never use it.
    visit.Tensor(head.dense_weight, {prefix + "pooler.dense.weight", {h, h}, TensorInit::kNormal, TensorPresence::kUnread});
    visit.Tensor(head.dense_bias, {prefix + "pooler.dense.bias", {h}, TensorInit::kNormal, TensorPresence::kUnread});
  }
}

// The relative bias table alone, loaded as F32 whatever the placement's compute type.
void VisitBiasTable(const ModelConfig& config, const std::string& prefix, MpnetWeights& weights, TensorVisitor& visit) {
  visit.Tensor(weights.relative_attention_bias,
               {prefix + "encoder.relative_attention_bias.weight", {kBuckets, config.num_attention_heads}});
}

void VisitAllTensors(const ModelConfig& config, const std::string& prefix, MpnetWeights& weights,
                     TensorVisitor& visit) {
  VisitTensors(config, prefix, weights, visit);
  VisitBiasTable(config, prefix, weights, visit);
}

enum Slot : size_t { kHidden, kEmbeddingSlots, kLayerSlots = kEmbeddingSlots + 2 };

class MpnetModel final : public Model {
 public:
  MpnetModel(const ModelConfig& config, const Placement& placement) : Model(placement), config_(config) {}
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden) override;
  int64_t max_sequence_length() const override { return config_.max_position_embeddings - config_.position_offset; }

  ModelConfig config_;
  MpnetWeights weights_;
  ops::RelativePositionBias position_bias_;
};

StatusOr<Tensor> MpnetModel::Forward(const ModelInput& input) {
  const int64_t tokens = input.token_ids.dim(0);
  layers::Slots slots(workspace_, kHidden);
  Tensor hidden = slots.Get(placement_.dtype, {tokens, config_.hidden_size});
  STAMEN_RETURN_IF_ERROR(slots.status());
  const float eps = static_cast<float>(config_.norm_eps);
  STAMEN_RETURN_IF_ERROR(
      layers::EmbedAbsolute(weights_.embeddings, input, config_.position_offset, eps, slots.Nested(), hidden));
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim},
      .options = {.position_bias = &position_bias_}};
  const layers::FeedForwardSettings feed_forward{.activation = config_.hidden_act,
                                                 .intermediate_size = config_.intermediate_size};
  for (const layers::PostNormLayerWeights& layer : weights_.layers) {
    STAMEN_RETURN_IF_ERROR(layers::PostNormLayer(layer, attention, feed_forward, eps, input.cu_seqlens,
                                                 layers::Slots(workspace_, kLayerSlots), hidden));
  }
  return hidden;
}

StatusOr<Tensor> MpnetModel::Classify(const ModelInput& input, const Tensor& hidden) {
  if (config_.head != ModelHead::kSequenceClassification) return Model::Classify(input, hidden);
  const layers::ClassifierSettings head{.activation = ops::Activation::kTanh, .num_labels = config_.num_labels};
  return layers::Classify(weights_.head, head, hidden, input.cu_seqlens, layers::Slots(workspace_, kLayerSlots));
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  if (config.head_dim * config.num_attention_heads != config.hidden_size) {
    return Status::Error("MPNet needs hidden_size to be a multiple of num_attention_heads");
  }
  auto model = std::make_unique<MpnetModel>(config, placement);
  STAMEN_RETURN_IF_ERROR(LoadTensors<MpnetWeights>(config, weights, placement, VisitTensors, model->weights_));
  const Placement bias_placement{placement.device, DataType::kF32};
  STAMEN_RETURN_IF_ERROR(LoadTensors<MpnetWeights>(config, weights, bias_placement, VisitBiasTable, model->weights_));
  model->position_bias_ = {model->weights_.relative_attention_bias, static_cast<int32_t>(kBuckets), kMaxDistance};
  return std::unique_ptr<Model>(std::move(model));
}

std::vector<TensorSpec> Tensors(const ModelConfig& config, const std::string& prefix) {
  return CollectTensors<MpnetWeights>(config, prefix, VisitAllTensors);
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "gelu", config));
  config->norm_eps = 1e-12;
  STAMEN_RETURN_IF_ERROR(root.Optional("layer_norm_eps", &config->norm_eps));
  int64_t buckets = kBuckets;
  STAMEN_RETURN_IF_ERROR(root.Optional("relative_attention_num_buckets", &buckets));
  if (buckets != kBuckets) {
    return root.Error("relative_attention_num_buckets", "must be 32 (MPNet's encoder always buckets by 32)");
  }
  return family_settings::ReadPositionsAfterPad(root, config);
}

constexpr std::string_view kPrefixes[] = {"", "mpnet."};

constexpr ArchitectureDefinition kArchitectures[] = {
    {"MPNetModel", ModelHead::kNone, "", "mpnet"},
    {"MPNetForMaskedLM", ModelHead::kNone, "mpnet.", ""},  // embedding use ignores lm_head
    {"MPNetForSequenceClassification", ModelHead::kSequenceClassification, "mpnet.", ""},
};

}  // namespace

extern const FamilyDefinition kMpnetFamily{
    .family = ModelFamily::kMpnet,
    .architectures = kArchitectures,
    .shape_keys = {},
    .weight_prefixes = kPrefixes,
    .prefix_probe = "embeddings.word_embeddings.weight",
    .read_settings = ReadSettings,
    .tensors = Tensors,
    .load = Load,
};

}  // namespace stamen::engine
