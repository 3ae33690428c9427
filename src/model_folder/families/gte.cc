// What config.json says of Alibaba's GTE (gte-base/large-en-v1.5, gte-multilingual-base and its
// reranker; engine/models/rotary_encoder.cc runs it): a post-norm encoder with rotary positions
// and a gated feed-forward, as transformers' GteModel / GteForSequenceClassification compute it.
// Two config formats:
//   - the hub's remote code (model_type "new", Alibaba-NLP/new-impl's configuration.NewConfig):
//     rope_theta, rope_scaling {"type": "ntk", "factor": f} (new-impl's fixed NTK scaling),
//     layer_norm_type, logn_attention_scale, pack_qkv, position_embedding_type;
//   - transformers' own GteConfig (model_type "gte", save_pretrained of 5.x): rope_parameters.
// What transformers' GteModel cannot compute is refused: RMSNorm, log-n attention scaling,
// unpacked q/k/v, mixed NTK scaling, positions other than RoPE.
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// The hub's rope_scaling: {"type": "ntk", "factor": f} (new-impl's NTKScalingRotaryEmbedding,
// which rescales whenever f > 1, every sequence length alike).
Status ReadNtkScaling(const JsonObject& scaling, ModelConfig* config) {
  std::string type;
  STAMEN_RETURN_IF_ERROR(scaling.Optional("type", &type));
  STAMEN_RETURN_IF_ERROR(scaling.Optional("rope_type", &type));
  if (type != "ntk") return scaling.Error("type", "is '" + type + "'; only 'ntk' is supported (new-impl's only kind)");
  if (scaling.Has("mixed_b")) return scaling.Error("mixed_b", "is set: mixed NTK scaling is not supported");
  double factor = 0.0;
  STAMEN_RETURN_IF_ERROR(scaling.Required("factor", &factor));
  if (!(factor >= 1.0)) return scaling.Error("factor", "must be at least 1");
  // At factor 1, new-impl's cache never exceeds max_position_embeddings and keeps plain RoPE.
  if (factor > 1.0) config->rope_scaling = {.factor = static_cast<float>(factor), .type = ops::RopeScalingType::kNtk};
  return Status();
}

// The keys of new-impl's NewConfig that change what it computes, each refused unless it keeps
// what transformers' GteModel computes; an absent key takes NewConfig's default.
Status ReadRemoteCodeSettings(const JsonObject& root, ModelConfig* config) {
  std::string norm_type = "layer_norm";
  STAMEN_RETURN_IF_ERROR(root.Optional("layer_norm_type", &norm_type));
  if (norm_type != "layer_norm") {
    return root.Error("layer_norm_type", "is '" + norm_type + "'; only 'layer_norm' is supported");
  }
  bool logn = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("logn_attention_scale", &logn));
  if (logn) return root.Error("logn_attention_scale", "is true; log-n attention scaling is not supported");
  bool packed = true;
  STAMEN_RETURN_IF_ERROR(root.Optional("pack_qkv", &packed));
  if (!packed) return root.Error("pack_qkv", "is false; only the packed qkv_proj is supported");
  std::string positions = "rope";
  STAMEN_RETURN_IF_ERROR(root.Optional("position_embedding_type", &positions));
  if (positions != "rope") {
    return root.Error("position_embedding_type", "is '" + positions + "'; only 'rope' is supported");
  }
  STAMEN_RETURN_IF_ERROR(family_settings::ReadTypeVocabularySize(root, 0, 0, config));  // NewConfig's default
  config->rope_theta = 10000.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("rope_theta", &config->rope_theta));
  if (!(config->rope_theta > 0)) return root.Error("rope_theta", "must be positive");
  JsonObject scaling = root;
  bool has_scaling = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("rope_scaling", &scaling, &has_scaling));
  if (has_scaling) STAMEN_RETURN_IF_ERROR(ReadNtkScaling(scaling, config));
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "gelu", config));
  config->gated_feed_forward = true;
  config->attention_bias = true;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "layer_norm_eps", 1e-12, config));
  if (config->head_dim * config->num_attention_heads != config->hidden_size) {
    return root.Error("head_dim", "must be hidden_size / num_attention_heads for GTE");
  }
  if (config->head_dim % 2 != 0) return root.Error("hidden_size", "must give an even head_dim for RoPE");
  config->remote_code_tensors = true;  // the hub's and save_pretrained's names (rotary_encoder.cc)
  if (config->model_type == "new" || config->architecture.starts_with("New")) {
    STAMEN_RETURN_IF_ERROR(ReadRemoteCodeSettings(root, config));
  } else {
    STAMEN_RETURN_IF_ERROR(family_settings::ReadTypeVocabularySize(root, 1, 0, config));  // GteConfig's default
    config->rope_theta = 160000.0;  // GteConfig's default_theta
    STAMEN_RETURN_IF_ERROR(family_settings::ReadRope(root, config));
  }
  return Status();
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"GteModel", ModelHead::kNone, "", "gte"},
    {"GteForSequenceClassification", ModelHead::kSequenceClassification, "gte.", ""},
    // As the hub's folders name them (new-impl's modeling.NewModel / NewForSequenceClassification).
    {"NewModel", ModelHead::kNone, "", "new"},
    {"NewForSequenceClassification", ModelHead::kSequenceClassification, "new.", ""},
};

// The hub's auto_map: Alibaba-NLP/new-impl--configuration.NewConfig, --modeling.NewModel
// (AutoModel), --modeling.NewForSequenceClassification (AutoModelForSequenceClassification).
constexpr std::string_view kRemoteCodeClasses[] = {"NewConfig", "NewModel", "NewForSequenceClassification"};

}  // namespace

extern const FamilyConfig kGteFamilyConfig{.architectures = kArchitectures,
                                           .read_settings = ReadSettings,
                                           .remote_code_classes = kRemoteCodeClasses};

}  // namespace stamen::engine
