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

// BERT's layer names but for the attention's.
const layers::PostNormLayerNames kLayerNames = {
    .query = "attention.attn.q", .key = "attention.attn.k", .value = "attention.attn.v",
    .output = "attention.attn.o",
    .attention_norm = "attention.LayerNorm",
};

// The tensor schema: every weight, as save_pretrained names it. The relative bias table stays
// F32 whatever the placement's compute type.
void VisitTensors(const ModelConfig& config, const std::string& prefix, layers::PostNormEncoderWeights& weights,
                  TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  layers::VisitPostNormEncoder(visit, weights, prefix, "encoder.layer.", kLayerNames, config);
  if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, weights.head, "classifier.dense", "classifier.out_proj", h, config.num_labels);
  } else {
    layers::VisitUnreadPooler(visit, weights.head, prefix + "pooler.dense", h);
  }
  visit.Tensor(weights.position_bias.table, {.name = prefix + "encoder.relative_attention_bias.weight",
                                             .shape = {kBuckets, config.num_attention_heads},
                                             .keep_float32 = true});
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  if (config.head_dim * config.num_attention_heads != config.hidden_size) {
    return Status::Error("MPNet needs hidden_size to be a multiple of num_attention_heads");
  }
  auto model = std::make_unique<layers::PostNormEncoderModel>(config, placement);
  layers::PostNormEncoderWeights& loaded = model->weights_;
  STAMEN_RETURN_IF_ERROR(LoadTensors(config, weights, placement, VisitTensors, loaded));
  loaded.position_bias.num_buckets = static_cast<int32_t>(kBuckets);
  loaded.position_bias.max_distance = kMaxDistance;
  return std::unique_ptr<Model>(std::move(model));
}

constexpr std::string_view kPrefixes[] = {"", "mpnet."};

}  // namespace

extern const FamilyDefinition kMpnetFamily{
    .weight_prefixes = kPrefixes,
    .tensors = SchemaTensors<layers::PostNormEncoderWeights, VisitTensors>, .load = Load};

}  // namespace stamen::engine
