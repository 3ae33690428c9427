// What config.json says of the Qwen2, Qwen3, Llama and Mistral decoders (engine/models/qwen.cc runs them).
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "silu", config));
  if (config->hidden_act != ops::Activation::kSilu) return root.Error("hidden_act", "must be silu");
  config->gated_feed_forward = true;
  config->norm_eps = 1e-6;
  STAMEN_RETURN_IF_ERROR(root.Optional("rms_norm_eps", &config->norm_eps));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadRope(root, config));
  // Qwen2 always has q/k/v biases; the others none unless their config sets attention_bias.
  config->attention_bias = config->family == ModelFamily::kQwen2;
  if (config->family != ModelFamily::kQwen2) STAMEN_RETURN_IF_ERROR(root.Optional("attention_bias", &config->attention_bias));
  bool mlp_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("mlp_bias", &mlp_bias));
  if (mlp_bias) return root.Error("mlp_bias", "is not supported (feed-forward layers without biases only)");
  if (config->family == ModelFamily::kMistral) {
    STAMEN_RETURN_IF_ERROR(root.Optional("sliding_window", &config->sliding_window));
    if (config->sliding_window < 0) return root.Error("sliding_window", "must not be negative");
  } else {
    // Qwen2's per-layer windows (use_sliding_window with max_window_layers) are not built.
    bool use_sliding_window = false;
    STAMEN_RETURN_IF_ERROR(root.Optional("use_sliding_window", &use_sliding_window));
    if (use_sliding_window) return root.Error("use_sliding_window", "is not supported");
  }
  config->causal = true;
  STAMEN_RETURN_IF_ERROR(root.Optional("is_causal", &config->causal));
  STAMEN_RETURN_IF_ERROR(root.Optional("tie_word_embeddings", &config->tie_word_embeddings));
  return Status();
}

constexpr ArchitectureDefinition kQwen2Architectures[] = {
    {"Qwen2Model", ModelHead::kNone, "", "qwen2"},
    {"Qwen2ForCausalLM", ModelHead::kNone, "model.", ""},  // embedding use ignores lm_head
    {"Qwen2ForSequenceClassification", ModelHead::kSequenceClassification, "model.", ""},
};

constexpr ArchitectureDefinition kLlamaArchitectures[] = {
    {"LlamaModel", ModelHead::kNone, "", "llama"},
    {"LlamaForCausalLM", ModelHead::kNone, "model.", ""},
    {"LlamaForSequenceClassification", ModelHead::kSequenceClassification, "model.", ""},
};

constexpr ArchitectureDefinition kMistralArchitectures[] = {
    {"MistralModel", ModelHead::kNone, "", "mistral"},
    {"MistralForCausalLM", ModelHead::kNone, "model.", ""},
    {"MistralForSequenceClassification", ModelHead::kSequenceClassification, "model.", ""},
};

constexpr ArchitectureDefinition kQwen3Architectures[] = {
    {"Qwen3Model", ModelHead::kNone, "", "qwen3"},
    {"Qwen3ForCausalLM", ModelHead::kNone, "model.", ""},
    {"Qwen3ForSequenceClassification", ModelHead::kSequenceClassification, "model.", ""},
};

}  // namespace

// The four decoder families share their settings.
constexpr FamilyConfig DecoderFamily(ModelFamily family, std::span<const ArchitectureDefinition> architectures) {
  return {.family = family, .architectures = architectures, .decoder = true, .read_settings = ReadSettings};
}

extern const FamilyConfig kQwen2FamilyConfig = DecoderFamily(ModelFamily::kQwen2, kQwen2Architectures);
extern const FamilyConfig kQwen3FamilyConfig = DecoderFamily(ModelFamily::kQwen3, kQwen3Architectures);
extern const FamilyConfig kLlamaFamilyConfig = DecoderFamily(ModelFamily::kLlama, kLlamaArchitectures);
extern const FamilyConfig kMistralFamilyConfig = DecoderFamily(ModelFamily::kMistral, kMistralArchitectures);

}  // namespace stamen::engine
