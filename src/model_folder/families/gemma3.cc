// What config.json says of the Gemma 2 and Gemma 3 text decoders, which share their blocks
// (sandwich RMSNorms, GeGLU, query_pre_attn_scalar, sliding and full layers; engine/models/gemma3.cc
// runs both): Gemma3TextModel, EmbeddingGemma among them, and Gemma2Model / Gemma2ForCausalLM
// (bge-reranker-v2.5-gemma2-lightweight-style yes/no rerankers, model_folder/yes_no_reranker.h),
// and CostWiseGemmaForCausalLM, bge-reranker-v2.5-gemma2-lightweight itself (per-layer heads).
#include <cmath>

#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// Which layers slide: layer_types when given, else every `pattern`-th layer is full (transformers'
// default: Gemma 2 alternates, sliding first, pattern 2; Gemma 3 reads its sliding_window_pattern,
// 6 by default).
Status ReadLayerTypes(const JsonObject& root, int64_t pattern, ModelConfig* config) {
  bool found = false;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadLayerTypes(root, config, &found));
  if (found) return Status();
  if (pattern < 1) return root.Error("sliding_window_pattern", "must be positive");
  for (int64_t i = 0; i < config->num_hidden_layers; ++i) config->sliding_window_layers.push_back((i + 1) % pattern != 0);
  return Status();
}

// The keys both generations read alike: GeGLU (hidden_activation), the RMSNorms' eps, attention
// biases, the sliding window and the query scale.
Status ReadSharedSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_activation", "gelu_pytorch_tanh", config));
  config->gated_feed_forward = true;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "rms_norm_eps", 1e-6, config));
  config->attention_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("attention_bias", &config->attention_bias));
  if (config->head_dim % 2 != 0) return root.Error("head_dim", "must be even for RoPE");
  config->sliding_window = 4096;
  STAMEN_RETURN_IF_ERROR(root.Optional("sliding_window", &config->sliding_window));
  if (config->sliding_window < 1) return root.Error("sliding_window", "must be positive");
  double query_pre_attn_scalar = 256.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("query_pre_attn_scalar", &query_pre_attn_scalar));
  if (!(query_pre_attn_scalar > 0)) return root.Error("query_pre_attn_scalar", "must be positive");
  config->attention_scale = 1.0 / std::sqrt(query_pre_attn_scalar);
  return Status();
}

Status ReadGemma3Settings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(ReadSharedSettings(root, config));
  // Gemma 3 has no soft-capping; a config that sets it asks for something transformers' Gemma 3
  // does not do either, so it is refused rather than run one way or the other.
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
  int64_t pattern = 6;
  STAMEN_RETURN_IF_ERROR(root.Optional("_sliding_window_pattern", &pattern));
  STAMEN_RETURN_IF_ERROR(root.Optional("sliding_window_pattern", &pattern));
  STAMEN_RETURN_IF_ERROR(ReadLayerTypes(root, pattern, config));
  // EmbeddingGemma sets use_bidirectional_attention; Gemma3 language models attend causally.
  bool bidirectional = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("use_bidirectional_attention", &bidirectional));
  config->causal = !bidirectional;
  // transformers turns a bidirectional model's sliding_window w into w // 2 + 1 keys either
  // side (exclusive bound); a causal one sees the w − 1 keys before the query and itself.
  config->attention_window = config->causal ? config->sliding_window : config->sliding_window / 2 + 1;
  return family_settings::ReadPadToken(root, config);
}

// A soft-capping value into `cap`: transformers' default when absent, 0 (none) when null, else
// positive (transformers would divide by a cap of 0).
Status ReadSoftCap(const JsonObject& root, std::string_view key, double fallback, double* cap) {
  if (!root.Has(key)) {
    *cap = root.raw()[key].error() == simdjson::SUCCESS ? 0.0 : fallback;  // present and null: no capping
    return Status();
  }
  STAMEN_RETURN_IF_ERROR(root.Optional(key, cap));
  if (!(*cap > 0) || !std::isfinite(*cap)) return root.Error(key, "must be a positive number or null");
  return Status();
}

// bge-reranker-v2.5-gemma2-lightweight's own config (FlagEmbedding's CostWiseGemmaConfig:
// layer_wise, start_layer, layer_sep). CostWiseGemmaForCausalLM with layer_wise scores through
// one-output heads, one per layer start_layer, start_layer + layer_sep, … ≤ num_hidden_layers
// (ModelConfig::layer_wise_start); without layer_wise its lm_head is Gemma2ForCausalLM's, whose
// logits FlagEmbedding's LightweightLLMReranker cannot read as a score, so that is refused, and
// so is layer_wise under any other architecture (transformers' Gemma2ForCausalLM ignores it and
// would not find lm_head.weight).
Status ReadLayerWiseHeads(const JsonObject& root, ModelConfig* config) {
  bool layer_wise = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("layer_wise", &layer_wise));
  const bool cost_wise = config->architecture == "CostWiseGemmaForCausalLM";
  if (!cost_wise) {
    if (layer_wise) {
      return root.Error("layer_wise", "is read for CostWiseGemmaForCausalLM only (per-layer heads), not " +
                                          config->architecture);
    }
    return Status();
  }
  if (!layer_wise) {
    return root.Error("layer_wise", "must be true: CostWiseGemmaForCausalLM without per-layer heads (its vocabulary "
                                    "lm_head) is not supported");
  }
  // CostWiseGemmaConfig's defaults.
  int64_t start_layer = 28, layer_sep = 28;
  STAMEN_RETURN_IF_ERROR(root.Optional("start_layer", &start_layer));
  STAMEN_RETURN_IF_ERROR(root.Optional("layer_sep", &layer_sep));
  if (start_layer < 1 || start_layer > config->num_hidden_layers) {
    return root.Error("start_layer", "must be within 1.." + std::to_string(config->num_hidden_layers));
  }
  if (layer_sep < 1) return root.Error("layer_sep", "must be positive");
  config->layer_wise_start = start_layer;
  config->layer_wise_step = layer_sep;
  return Status();
}

Status ReadGemma2Settings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(ReadSharedSettings(root, config));
  // One RoPE for every layer (Gemma2RotaryEmbedding), plain only: the sliding layers' table is
  // made without rope scaling (layers::EmbedRotary).
  config->rope_theta = 10'000.0;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadRope(root, config));
  if (config->rope_scaling.factor != 0.0f) return root.Error("rope_parameters", "is not supported (only plain RoPE)");
  config->local_rope_theta = config->rope_theta;
  STAMEN_RETURN_IF_ERROR(ReadLayerTypes(root, 2, config));
  // transformers' Gemma 2 builds causal masks whatever use_bidirectional_attention says.
  bool bidirectional = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("use_bidirectional_attention", &bidirectional));
  if (bidirectional) return root.Error("use_bidirectional_attention", "is not supported for Gemma 2 (must be false)");
  config->causal = true;
  config->attention_window = config->sliding_window;
  STAMEN_RETURN_IF_ERROR(ReadSoftCap(root, "attn_logit_softcapping", 50.0, &config->attention_logit_softcap));
  STAMEN_RETURN_IF_ERROR(ReadSoftCap(root, "final_logit_softcapping", 30.0, &config->final_logit_softcap));
  STAMEN_RETURN_IF_ERROR(ReadLayerWiseHeads(root, config));
  config->tie_word_embeddings = true;
  STAMEN_RETURN_IF_ERROR(root.Optional("tie_word_embeddings", &config->tie_word_embeddings));
  return family_settings::ReadPadToken(root, config);
}

constexpr ArchitectureDefinition kGemma3Architectures[] = {
    {"Gemma3TextModel", ModelHead::kNone, "", "gemma3_text"},
};

constexpr ArchitectureDefinition kGemma2Architectures[] = {
    {"Gemma2Model", ModelHead::kNone, "", "gemma2"},
    {"Gemma2ForCausalLM", ModelHead::kNone, "model.", ""},  // embedding use ignores lm_head
    // FlagEmbedding's remote code (bge-reranker-v2.5-gemma2-lightweight): Gemma 2 with per-layer heads.
    {"CostWiseGemmaForCausalLM", ModelHead::kNone, "model.", ""},
};

// What bge-reranker-v2.5-gemma2-lightweight's auto_map loads (gemma_config.py, gemma_model.py):
// Gemma 2's blocks; CostWiseGemmaModel is Gemma2Model when no cut-off is asked of it.
constexpr std::string_view kGemma2RemoteCodeClasses[] = {"CostWiseGemmaConfig", "CostWiseGemmaModel",
                                                         "CostWiseGemmaForCausalLM"};

}  // namespace

// A decoder in the registry's sense: RoPE, and it may attend causally (Gemma3 language
// models); a bidirectional one (EmbeddingGemma) pools the mean by default, as the engine
// derives from config.causal.
extern const FamilyConfig kGemma3FamilyConfig{
    .architectures = kGemma3Architectures, .decoder = true,
    .read_settings = ReadGemma3Settings};

extern const FamilyConfig kGemma2FamilyConfig{
    .architectures = kGemma2Architectures, .decoder = true,
    .read_settings = ReadGemma2Settings, .remote_code_classes = kGemma2RemoteCodeClasses};

}  // namespace stamen::engine
