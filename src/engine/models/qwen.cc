// Qwen2, Qwen3, Llama and Mistral decoders as embedding models (pre-RMSNorm transformer,
// rotary positions, grouped-query attention, SwiGLU feed-forward, no KV cache: each step sees
// whole sequences). Llama and Mistral are Qwen2 without the q/k/v biases (unless Llama's
// attention_bias), Mistral with a causal sliding window (e5-mistral, SFR, Linq embedders).
//
// Per layer, with x the hidden state [T, H]:
//   qkv = RMSNorm(x)·W_qkvᵀ (+ b_qkv on Qwen2)   then, on Qwen3, RMSNorm of each q/k head;
//   rotate q and k by RoPE;   x += Attention(qkv)·W_oᵀ
//   x += (silu(n·W_gateᵀ) ⊙ n·W_upᵀ)·W_downᵀ,  n = RMSNorm(x)
// and a final RMSNorm. Positions restart at 0 for every sequence of the ragged batch.
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

// An RMSNorm weight, stored as the w it multiplies by.
TensorSpec NormSpec(const std::string& name, int64_t size) { return {name, {size}, TensorInit::kNormOne}; }

// The tensor schema, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, layers::PreNormDecoderWeights& weights,
                  TensorVisitor& visit) {
  const layers::PreNormDecoderSchema schema{.feed_forward_norm = "post_attention_layernorm",
                                            .norm = NormSpec,
                                            .head_norms = config.family == ModelFamily::kQwen3};
  layers::VisitPreNormDecoder(visit, weights, prefix, schema, config);
}

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
  return Status();
}

constexpr std::string_view kPrefixes[] = {"", "model."};

constexpr ArchitectureDefinition kQwen2Architectures[] = {
    {"Qwen2Model", ModelHead::kNone, "", "qwen2"},
    {"Qwen2ForCausalLM", ModelHead::kNone, "model.", ""},  // embedding use ignores lm_head
};

constexpr ArchitectureDefinition kLlamaArchitectures[] = {
    {"LlamaModel", ModelHead::kNone, "", "llama"},
    {"LlamaForCausalLM", ModelHead::kNone, "model.", ""},
};

constexpr ArchitectureDefinition kMistralArchitectures[] = {
    {"MistralModel", ModelHead::kNone, "", "mistral"},
    {"MistralForCausalLM", ModelHead::kNone, "model.", ""},
};

constexpr ArchitectureDefinition kQwen3Architectures[] = {
    {"Qwen3Model", ModelHead::kNone, "", "qwen3"},
    {"Qwen3ForCausalLM", ModelHead::kNone, "model.", ""},
};

// The four decoder families share everything but their architectures and family value.
constexpr FamilyDefinition DecoderFamily(ModelFamily family, std::span<const ArchitectureDefinition> architectures) {
  return {.family = family, .architectures = architectures, .decoder = true, .weight_prefixes = kPrefixes,
          .read_settings = ReadSettings, .tensors = SchemaTensors<layers::PreNormDecoderWeights, VisitTensors>,
          .load = LoadSchemaModel<layers::PreNormDecoderModel, VisitTensors>};
}

}  // namespace

extern const FamilyDefinition kQwen2Family = DecoderFamily(ModelFamily::kQwen2, kQwen2Architectures);
extern const FamilyDefinition kQwen3Family = DecoderFamily(ModelFamily::kQwen3, kQwen3Architectures);
extern const FamilyDefinition kLlamaFamily = DecoderFamily(ModelFamily::kLlama, kLlamaArchitectures);
extern const FamilyDefinition kMistralFamily = DecoderFamily(ModelFamily::kMistral, kMistralArchitectures);

}  // namespace stamen::engine
