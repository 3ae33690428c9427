// What config.json says of MPNet (engine/models/mpnet.cc runs it).
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// MPNet's encoder always buckets relative positions by 32 (engine/models/mpnet.cc's kBuckets).
constexpr int64_t kBuckets = 32;

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "gelu", config));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "layer_norm_eps", 1e-12, config));
  int64_t buckets = kBuckets;
  STAMEN_RETURN_IF_ERROR(root.Optional("relative_attention_num_buckets", &buckets));
  if (buckets != kBuckets) {
    return root.Error("relative_attention_num_buckets", "must be 32 (MPNet's encoder always buckets by 32)");
  }
  return family_settings::ReadPositionsAfterPad(root, config);
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"MPNetModel", ModelHead::kNone, "", "mpnet"},
    {"MPNetForMaskedLM", ModelHead::kNone, "mpnet.", ""},  // embedding use ignores lm_head
    {"MPNetForSequenceClassification", ModelHead::kSequenceClassification, "mpnet.", ""},
};

}  // namespace

extern const FamilyConfig kMpnetFamilyConfig{
    .architectures = kArchitectures, .read_settings = ReadSettings};

}  // namespace stamen::engine
