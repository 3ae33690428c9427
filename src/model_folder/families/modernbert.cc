// What config.json says of ModernBERT (engine/models/modernbert.cc runs it).
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// Which layers attend locally: `layer_types` when given (transformers ≥ 5 writes it and then
// ignores global_attn_every_n_layers), else every n-th layer from layer 0 is global.
Status ReadLayerTypes(const JsonObject& root, ModelConfig* config) {
  bool found = false;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadLayerTypes(root, config, &found));
  if (found) return Status();
  const auto layers = static_cast<size_t>(config->num_hidden_layers);
  int64_t every = 3;  // transformers' default
  STAMEN_RETURN_IF_ERROR(root.Optional("global_attn_every_n_layers", &every));
  if (every <= 0) return root.Error("global_attn_every_n_layers", "must be positive");
  for (size_t i = 0; i < layers; ++i) config->sliding_window_layers.push_back(i % every != 0);
  return Status();
}

// The RoPE base of one layer type: rope_parameters[type].rope_theta when given (transformers
// prefers it), else the older flat key, else transformers' default.
Status ReadRopeTheta(const JsonObject& root, std::string_view layer_type, std::string_view flat_key, double* theta) {
  STAMEN_RETURN_IF_ERROR(root.Optional(flat_key, theta));
  JsonObject parameters = root;
  bool has_parameters = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("rope_parameters", &parameters, &has_parameters));
  if (has_parameters) {
    if (parameters.Has("rope_theta") || parameters.Has("rope_type")) {
      return root.Error("rope_parameters", "must be keyed by layer type (full_attention, sliding_attention)");
    }
    STAMEN_RETURN_IF_ERROR(family_settings::ReadLayerTypeRope(parameters, layer_type, theta));
  }
  if (!(*theta > 0)) return root.Error(flat_key, "must be positive");
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_activation", "gelu", config));
  // Wqkv is [3·hidden, hidden]: head_dim is always hidden / heads.
  if (config->head_dim * config->num_attention_heads != config->hidden_size) {
    return root.Error("head_dim", "must be hidden_size / num_attention_heads for ModernBERT");
  }
  if (config->head_dim % 2 != 0) return root.Error("hidden_size", "must give an even head_dim for RoPE");
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "norm_eps", 1e-5, config));
  config->norm_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("norm_bias", &config->norm_bias));
  config->attention_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("attention_bias", &config->attention_bias));
  config->feed_forward_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("mlp_bias", &config->feed_forward_bias));
  config->gated_feed_forward = true;
  if (root.Has("rope_scaling")) return root.Error("rope_scaling", "is not supported (only plain RoPE)");
  config->rope_theta = 160000.0;
  STAMEN_RETURN_IF_ERROR(ReadRopeTheta(root, "full_attention", "global_rope_theta", &config->rope_theta));
  config->local_rope_theta = 10000.0;
  STAMEN_RETURN_IF_ERROR(ReadRopeTheta(root, "sliding_attention", "local_rope_theta", &config->local_rope_theta));
  STAMEN_RETURN_IF_ERROR(ReadLayerTypes(root, config));
  int64_t local_attention = 128;
  STAMEN_RETURN_IF_ERROR(root.Optional("local_attention", &local_attention));
  if (local_attention <= 0) return root.Error("local_attention", "must be positive");
  // transformers lets query i see key j when |i − j| ≤ local_attention // 2; the window is exclusive.
  config->attention_window = local_attention / 2 + 1;
  if (config->head != ModelHead::kSequenceClassification) return Status();

  std::string pooling = "cls";
  STAMEN_RETURN_IF_ERROR(root.Optional("classifier_pooling", &pooling));
  if (pooling == "cls") {
    config->classifier_pooling = ops::PoolingMode::kCls;
  } else if (pooling == "mean") {
    config->classifier_pooling = ops::PoolingMode::kMean;
  } else {
    return root.Error("classifier_pooling", "must be \"cls\" or \"mean\", not '" + pooling + "'");
  }
  std::string activation = "gelu";
  STAMEN_RETURN_IF_ERROR(root.Optional("classifier_activation", &activation));
  const auto parsed = ops::ActivationFromName(activation);
  if (!parsed.has_value()) {
    return root.Error("classifier_activation", "names unsupported activation '" + activation + "'");
  }
  config->classifier_activation = *parsed;
  config->classifier_bias = false;
  return root.Optional("classifier_bias", &config->classifier_bias);
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"ModernBertModel", ModelHead::kNone, "", "modernbert"},
    {"ModernBertForSequenceClassification", ModelHead::kSequenceClassification, "model.", ""},
};

}  // namespace

extern const FamilyConfig kModernBertFamilyConfig{
    .architectures = kArchitectures, .read_settings = ReadSettings};

}  // namespace stamen::engine
