// What config.json says of Gemma (1) decoders, GemmaForCausalLM (bge-reranker-v2-gemma run as a
// yes/no reranker, model_folder/yes_no_reranker.h); engine/models/gemma.cc runs them.
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  // GemmaConfig turns the official releases' legacy "gelu" into the tanh approximation it
  // was meant to be (transformers' configuration_gemma.py).
  std::string activation = "gelu_pytorch_tanh";
  STAMEN_RETURN_IF_ERROR(root.Optional("hidden_act", &activation));
  if (activation == "gelu") activation = "gelu_pytorch_tanh";
  const auto parsed = ops::ActivationFromName(activation);
  if (!parsed.has_value()) return root.Error("hidden_act", "names unsupported activation '" + activation + "'");
  config->hidden_act = *parsed;
  config->gated_feed_forward = true;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "rms_norm_eps", 1e-6, config));
  config->attention_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("attention_bias", &config->attention_bias));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadRope(root, config));
  // Gemma ties its output projection to the embedding table unless the config says otherwise.
  config->tie_word_embeddings = true;
  STAMEN_RETURN_IF_ERROR(root.Optional("tie_word_embeddings", &config->tie_word_embeddings));
  bool bidirectional = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("use_bidirectional_attention", &bidirectional));
  config->causal = !bidirectional;
  return family_settings::ReadPadToken(root, config);
}

constexpr ArchitectureDefinition kGemmaArchitectures[] = {
    {"GemmaModel", ModelHead::kNone, "", "gemma"},
    {"GemmaForCausalLM", ModelHead::kNone, "model.", ""},  // embedding use ignores lm_head
};

}  // namespace

extern const FamilyConfig kGemmaFamilyConfig{
    .architectures = kGemmaArchitectures, .decoder = true,
    .read_settings = ReadSettings};

}  // namespace stamen::engine
