// Config readers shared by the families' read_settings.
#include "model_folder/family_config.h"

namespace stamen::engine::family_settings {

Status ReadActivation(const JsonObject& root, std::string_view key, std::string_view fallback, ModelConfig* config) {
  std::string activation(fallback);
  STAMEN_RETURN_IF_ERROR(root.Optional(key, &activation));
  const auto parsed = ops::ActivationFromName(activation);
  if (!parsed.has_value()) return root.Error(key, "names unsupported activation '" + activation + "'");
  config->hidden_act = *parsed;
  return Status();
}

Status ReadNormEps(const JsonObject& root, std::string_view key, double fallback, ModelConfig* config) {
  config->norm_eps = fallback;
  return root.Optional(key, &config->norm_eps);
}

Status ReadTypeVocabularySize(const JsonObject& root, int64_t fallback, int64_t minimum, ModelConfig* config) {
  config->type_vocab_size = fallback;
  STAMEN_RETURN_IF_ERROR(root.Optional("type_vocab_size", &config->type_vocab_size));
  if (config->type_vocab_size >= minimum) return Status();
  return root.Error("type_vocab_size", minimum > 0 ? "must be positive" : "must not be negative");
}

namespace {

// A partial_rotary_factor (transformers' key, in rope_parameters or beside it) other than 1.
Status RefusePartialRotary(const JsonObject& object) {
  double fraction = 1.0;
  STAMEN_RETURN_IF_ERROR(object.Optional("partial_rotary_factor", &fraction));
  if (fraction == 1.0) return Status();
  return object.Error("partial_rotary_factor", "is " + std::to_string(fraction) +
                                                   "; this family rotates whole heads (partial rotary is not supported)");
}

// One RoPE parameter object: rope_type ("type" in older configs) "default", "llama3" with
// its four keys, which transformers requires, or with `dynamic_ntk` "dynamic" with its factor.
Status ReadRopeType(const JsonObject& rope, ModelConfig* config, bool dynamic_ntk) {
  STAMEN_RETURN_IF_ERROR(RefusePartialRotary(rope));
  std::string rope_type = "default";
  STAMEN_RETURN_IF_ERROR(rope.Optional("type", &rope_type));
  STAMEN_RETURN_IF_ERROR(rope.Optional("rope_type", &rope_type));
  if (rope_type == "default") return Status();
  if (rope_type == "dynamic" && dynamic_ntk) {
    double factor = 0;
    STAMEN_RETURN_IF_ERROR(rope.Required("factor", &factor));
    if (!(factor >= 1.0)) return rope.Error("factor", "must be at least 1 for dynamic NTK scaling");
    config->rope_scaling = {.factor = static_cast<float>(factor),
                            .original_max_position_embeddings = static_cast<float>(config->max_position_embeddings),
                            .type = ops::RopeScalingType::kDynamicNtk};
    return Status();
  }
  if (rope_type != "llama3") {
    return rope.Error("rope_type", "'" + rope_type + "' is not supported (plain RoPE or llama3" +
                                       (dynamic_ntk ? ", or dynamic)" : ")"));
  }
  double factor = 0, low = 0, high = 0, original = 0;
  STAMEN_RETURN_IF_ERROR(rope.Required("factor", &factor));
  STAMEN_RETURN_IF_ERROR(rope.Required("low_freq_factor", &low));
  STAMEN_RETURN_IF_ERROR(rope.Required("high_freq_factor", &high));
  STAMEN_RETURN_IF_ERROR(rope.Required("original_max_position_embeddings", &original));
  if (!(factor > 0)) return rope.Error("factor", "must be positive");
  if (!(low > 0) || !(high > low)) return rope.Error("high_freq_factor", "must exceed low_freq_factor, which must be positive");
  if (!(original > 0)) return rope.Error("original_max_position_embeddings", "must be positive");
  config->rope_scaling = {.factor = static_cast<float>(factor),
                          .low_freq_factor = static_cast<float>(low),
                          .high_freq_factor = static_cast<float>(high),
                          .original_max_position_embeddings = static_cast<float>(original)};
  return Status();
}

}  // namespace

Status ReadRope(const JsonObject& root, ModelConfig* config, bool dynamic_ntk) {
  STAMEN_RETURN_IF_ERROR(RefusePartialRotary(root));
  STAMEN_RETURN_IF_ERROR(root.Optional("rope_theta", &config->rope_theta));
  // transformers ≥ 5 writes {"rope_parameters": {"rope_theta": …, "rope_type": …, scaling keys}};
  // older configs rope_theta beside {"rope_scaling": {"rope_type": …, scaling keys}} or null.
  JsonObject rope = root;
  bool has_rope_parameters = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("rope_parameters", &rope, &has_rope_parameters));
  if (has_rope_parameters) {
    STAMEN_RETURN_IF_ERROR(rope.Optional("rope_theta", &config->rope_theta));
    STAMEN_RETURN_IF_ERROR(ReadRopeType(rope, config, dynamic_ntk));
  } else if (root.Has("rope_scaling")) {
    JsonObject scaling = root;
    bool has_scaling = false;
    STAMEN_RETURN_IF_ERROR(root.OptionalObject("rope_scaling", &scaling, &has_scaling));
    if (has_scaling) STAMEN_RETURN_IF_ERROR(ReadRopeType(scaling, config, dynamic_ntk));
  }
  if (!(config->rope_theta > 0)) return root.Error("rope_theta", "must be positive");
  if (config->head_dim % 2 != 0) return root.Error("head_dim", "must be even for RoPE");
  return Status();
}

Status ReadPadToken(const JsonObject& root, ModelConfig* config) {
  if (!root.Has("pad_token_id")) return Status();
  int64_t pad = 0;
  STAMEN_RETURN_IF_ERROR(root.Optional("pad_token_id", &pad));
  config->pad_token_id = pad;
  return Status();
}

Status ReadPositionsAfterPad(const JsonObject& root, ModelConfig* config) {
  config->pad_token_id = config->pad_token_id.value_or(1);
  // Positions run from pad_token_id + 1, so the table must hold that offset as well.
  if (*config->pad_token_id < 0 || *config->pad_token_id + 2 > config->max_position_embeddings) {
    return root.Error("pad_token_id", "leaves no room for positions in max_position_embeddings");
  }
  config->position_offset = *config->pad_token_id + 1;
  return Status();
}

Status ReadLayerTypeRope(const JsonObject& rope_parameters, std::string_view layer_type, double* theta) {
  JsonObject parameters = rope_parameters;
  bool found = false;
  STAMEN_RETURN_IF_ERROR(rope_parameters.OptionalObject(layer_type, &parameters, &found));
  if (!found) return Status();
  STAMEN_RETURN_IF_ERROR(parameters.Optional("rope_theta", theta));
  std::string rope_type = "default";
  STAMEN_RETURN_IF_ERROR(parameters.Optional("rope_type", &rope_type));
  if (rope_type != "default") {
    return parameters.Error("rope_type", "'" + rope_type + "' is not supported (only plain RoPE)");
  }
  return Status();
}

Status ReadLayerTypes(const JsonObject& root, ModelConfig* config, bool* found) {
  config->sliding_window_layers.clear();
  *found = root.Has("layer_types");
  if (!*found) return Status();
  simdjson::dom::array types;
  if (root.raw()["layer_types"].get(types) != simdjson::SUCCESS) {
    return root.Error("layer_types", "must be an array of strings");
  }
  for (simdjson::dom::element element : types) {
    std::string_view type;
    if (element.get(type) != simdjson::SUCCESS) return root.Error("layer_types", "must be an array of strings");
    if (type != "full_attention" && type != "sliding_attention") {
      return root.Error("layer_types",
                        "names unsupported '" + std::string(type) + "' (full_attention or sliding_attention)");
    }
    config->sliding_window_layers.push_back(type == "sliding_attention");
  }
  const auto layers = static_cast<size_t>(config->num_hidden_layers);
  if (config->sliding_window_layers.size() != layers) {
    return root.Error("layer_types", "has " + std::to_string(config->sliding_window_layers.size()) +
                                         " entries for num_hidden_layers " + std::to_string(layers));
  }
  return Status();
}

}  // namespace stamen::engine::family_settings
