// Gemma3 text decoders (Gemma3TextModel), and EmbeddingGemma, the bidirectional one: a
// pre- and post-RMSNorm transformer with rotary positions, grouped-query attention with
// per-head q/k RMSNorm, sliding-window and full layers, and a GeGLU feed-forward. No KV
// cache: each step sees whole sequences.
//
// With x the hidden state [T, H], embeddings scaled by sqrt(H), per layer:
//   x += RMSNorm_post_attention(Attention(rotate(qk_norm(RMSNorm_input(x)·W_qkvᵀ)))·W_oᵀ)
//   x += RMSNorm_post_feedforward((gelu_tanh(n·W_gateᵀ) ⊙ n·W_upᵀ)·W_downᵀ),  n = RMSNorm_pre_feedforward(x)
// and a final RMSNorm. Gemma's RMSNorm multiplies by (1 + w); the loader adds the 1 to every
// stored norm weight (TensorSpec::load_offset) so ops::RmsNorm applies unchanged, and folds
// sqrt(H) into the embedding table (load_scale): both are the fp32 products transformers
// computes in an fp32 model. Sliding layers see keys within the window and rotate with
// rope_local_base_freq; full layers see the whole sequence and rotate with rope_theta.
#include <cmath>
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

// A Gemma RMSNorm weight as save_pretrained names it: stored as w − 1 (transformers
// initialises it to zeros), loaded as w.
TensorSpec NormSpec(const std::string& name, int64_t size) {
  return {.name = name,
          .shape = {size},
          .init = TensorInit::kNormal,
          .presence = TensorPresence::kRequired,
          .load_scale = 1.0f,
          .load_offset = 1.0f};
}

// The tensor schema, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, layers::PreNormDecoderWeights& weights,
                  TensorVisitor& visit) {
  const layers::PreNormDecoderSchema schema{
      .attention_output_norm = "post_attention_layernorm",
      .feed_forward_norm = "pre_feedforward_layernorm",
      .feed_forward_output_norm = "post_feedforward_layernorm",
      .norm = NormSpec,
      .head_norms = true,
      .output_bias = config.attention_bias,
      .embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(config.hidden_size)))};
  layers::VisitPreNormDecoder(visit, weights, prefix, schema, config);
}

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

constexpr std::string_view kPrefixes[] = {"", "model."};

constexpr ArchitectureDefinition kGemma3Architectures[] = {
    {"Gemma3TextModel", ModelHead::kNone, "", "gemma3_text"},
};

}  // namespace

// A decoder in the registry's sense: RoPE, and it may attend causally (Gemma3 language
// models); a bidirectional one (EmbeddingGemma) pools the mean by default, as the engine
// derives from config.causal.
extern const FamilyDefinition kGemma3Family{
    .family = ModelFamily::kGemma3, .architectures = kGemma3Architectures, .decoder = true,
    .weight_prefixes = kPrefixes, .read_settings = ReadSettings,
    .tensors = SchemaTensors<layers::PreNormDecoderWeights, VisitTensors>,
    .load = LoadSchemaModel<layers::PreNormDecoderModel, VisitTensors>};

}  // namespace stamen::engine
