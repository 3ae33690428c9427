// What config.json says of EuroBERT (engine/models/qwen.cc runs it with the Llama decoders):
// Llama's blocks attending bidirectionally, as transformers' EuroBertModel and the hub's remote code
// (EuroBERT/EuroBERT-210m's modeling_eurobert.py) define it. The hub's folders name
// EuroBertForMaskedLM (the backbone under "model.", its lm_head unread) and rope_theta; transformers
// 5's save_pretrained writes rope_parameters.
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "silu", config));
  config->gated_feed_forward = true;
  config->norm_eps = 1e-5;  // EuroBertConfig's rms_norm_eps
  STAMEN_RETURN_IF_ERROR(root.Optional("rms_norm_eps", &config->norm_eps));
  config->rope_theta = 10000.0;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadRope(root, config));
  // attention_bias puts biases on q/k/v and o_proj alike (EuroBertAttention).
  STAMEN_RETURN_IF_ERROR(root.Optional("attention_bias", &config->attention_bias));
  bool mlp_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("mlp_bias", &mlp_bias));
  if (mlp_bias) return root.Error("mlp_bias", "is not supported (feed-forward layers without biases only)");
  // EuroBertAttention.is_causal is False and the model builds a bidirectional mask: there is
  // no causal EuroBERT.
  config->causal = false;
  return root.Optional("tie_word_embeddings", &config->tie_word_embeddings);
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"EuroBertModel", ModelHead::kNone, "", "eurobert"},
    {"EuroBertForMaskedLM", ModelHead::kNone, "model.", ""},  // as the hub ships it; embedding use ignores lm_head
};

// The hub's auto_map: configuration_eurobert.EuroBertConfig, modeling_eurobert.EuroBertModel (AutoModel).
constexpr std::string_view kRemoteCodeClasses[] = {"EuroBertConfig", "EuroBertModel"};

}  // namespace

// A decoder in the registry's sense (RoPE, pre-norm), bidirectional, so it pools the mean by default.
extern const FamilyConfig kEuroBertFamilyConfig{.family = ModelFamily::kEuroBert,
                                                .architectures = kArchitectures,
                                                .decoder = true,
                                                .read_settings = ReadSettings,
                                                .remote_code_classes = kRemoteCodeClasses};

}  // namespace stamen::engine
