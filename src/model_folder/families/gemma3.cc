// What config.json says of Gemma3 text encoders, EmbeddingGemma among them (engine/models/gemma3.cc runs them).
#include <cmath>

#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// Which layers slide: layer_types when given, else transformers' sliding_window_pattern rule
// (every pattern-th layer is full).
Status ReadLayerTypes(const JsonObject& root, ModelConfig* config) {
  bool found = false;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadLayerTypes(root, config, &found));
  if (found) return Status();
  int64_t pattern = 6;
  STAMEN_RETURN_IF_ERROR(root.Optional("_sliding_window_pattern", &pattern));
  STAMEN_RETURN_IF_ERROR(root.Optional("sliding_window_pattern", &pattern));
  if (pattern < 1) return root.Error("sliding_window_pattern", "must be positive");
  for (int64_t i = 0; i < config->num_hidden_layers; ++i) config->sliding_window_layers.push_back((i + 1) % pattern != 0);
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_activation", "gelu_pytorch_tanh", config));
  config->gated_feed_forward = true;
  config->norm_eps = 1e-6;
  STAMEN_RETURN_IF_ERROR(root.Optional("rms_norm_eps", &config->norm_eps));
  config->attention_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("attention_bias", &config->attention_bias));
  // Soft-capping would tanh-squash the attention scores (or the LM logits); stamen's attention
  // has no such step, so such a model is refused rather than run differently.
  if (root.Has("attn_logit_softcapping")) return root.Error("attn_logit_softcapping", "is not supported (must be null)");
  if (root.Has("final_logit_softcapping")) {
    return root.Error("final_logit_softcapping", "is not supported (must be null)");
  }
  if (root.Has("rope_scaling")) return root.Error("rope_scaling", "is not supported (only plain RoPE)");
  // transformers' defaults: 1e6 on full layers, 1e4 (rope_local_base_freq) on sliding ones;
  // transformers ≥ 5 writes both into rope_parameters, which wins.
  config->rope_theta = 1'000'000.0;
  config->local_rope_theta = 10'000.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("rope_theta", &config->rope_theta));
  STAMEN_RETURN_IF_ERROR(root.Optional("rope_local_base_freq", &config->local_rope_theta));
  JsonObject rope_parameters = root;
  bool has_rope_parameters = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("rope_parameters", &rope_parameters, &has_rope_parameters));
  if (has_rope_parameters) {
    STAMEN_RETURN_IF_ERROR(
        family_settings::ReadLayerTypeRope(rope_parameters, "full_attention", &config->rope_theta));
    STAMEN_RETURN_IF_ERROR(
        family_settings::ReadLayerTypeRope(rope_parameters, "sliding_attention", &config->local_rope_theta));
  }
  if (!(config->rope_theta > 0)) return root.Error("rope_theta", "must be positive");
  if (!(config->local_rope_theta > 0)) return root.Error("rope_local_base_freq", "must be positive");
  if (config->head_dim % 2 != 0) return root.Error("head_dim", "must be even for RoPE");
  STAMEN_RETURN_IF_ERROR(ReadLayerTypes(root, config));
  config->sliding_window = 4096;
  STAMEN_RETURN_IF_ERROR(root.Optional("sliding_window", &config->sliding_window));
  if (config->sliding_window < 1) return root.Error("sliding_window", "must be positive");
  double query_pre_attn_scalar = 256.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("query_pre_attn_scalar", &query_pre_attn_scalar));
  if (!(query_pre_attn_scalar > 0)) return root.Error("query_pre_attn_scalar", "must be positive");
  config->attention_scale = 1.0 / std::sqrt(query_pre_attn_scalar);
  // EmbeddingGemma sets use_bidirectional_attention; Gemma3 language models attend causally.
  bool bidirectional = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("use_bidirectional_attention", &bidirectional));
  config->causal = !bidirectional;
  // transformers turns a bidirectional model's sliding_window w into w // 2 + 1 keys either
  // side (exclusive bound); a causal one sees the w − 1 keys before the query and itself.
  config->attention_window = config->causal ? config->sliding_window : config->sliding_window / 2 + 1;
  return family_settings::ReadPadToken(root, config);
}

constexpr ArchitectureDefinition kGemma3Architectures[] = {
    {"Gemma3TextModel", ModelHead::kNone, "", "gemma3_text"},
};

}  // namespace

// A decoder in the registry's sense: RoPE, and it may attend causally (Gemma3 language
// models); a bidirectional one (EmbeddingGemma) pools the mean by default, as the engine
// derives from config.causal.
extern const FamilyConfig kGemma3FamilyConfig{
    .family = ModelFamily::kGemma3, .architectures = kGemma3Architectures, .decoder = true,
    .read_settings = ReadSettings};

}  // namespace stamen::engine
