// What config.json says of NomicBERT (nomic-embed-text-v1 / v1.5 / v2-moe;
// engine/models/rotary_encoder.cc runs it): a post-norm encoder with rotary positions, as
// transformers' NomicBertModel computes v1 / v1.5 (SwiGLU, no biases) and nomic's remote code
// computes v2-moe (biases, a plain gelu feed-forward, every second layer's replaced by experts).
// Two config formats:
//   - the hub's remote code (nomic-ai/nomic-bert-2048's configuration_hf_nomic_bert.NomicBertConfig,
//     a GPT2Config): n_embd, n_layer, n_head, n_inner, n_positions, layer_norm_epsilon,
//     activation_function, rotary_emb_base, rotary_emb_fraction, qkv_proj_bias, …; an absent key
//     takes that class's default (rotary_emb_fraction 0, biases on), which stamen then refuses;
//   - transformers' own NomicBertConfig (save_pretrained of 5.x): hidden_size, …, hidden_act,
//     layer_norm_eps, rope_parameters (rope_type "default" or "dynamic").
// Partial rotary (rotary_emb_fraction < 1: config.rotary_dim) and dynamic NTK scaling
// (rotary_scaling_factor, or rope_type "dynamic": RopeScalingType::kDynamicNtk) run as the remote
// code computes them. nomic-embed-text-v2-moe's experts (num_experts, moe_top_k,
// moe_every_n_layers; the megablocks tensor layout) run as its remote code's NomicMoELayer: a
// softmax over every expert, the top k kept without renormalising, one shared output bias.
// Refused: interleaved or xPos rotary, pre-norm, SwiGLU with biases or gelu without them, other
// feed-forwards, experts other than those (shared experts, expert-choice routing, normalised
// weights, another moe_impl, gated experts), and transformers' partial_rotary_factor, which its
// NomicBertModel cannot apply.
#include <algorithm>

#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// A key of the remote code's config that must keep the one value stamen computes; `fallback` is
// what that config class assumes when the key is absent.
Status RequireBool(const JsonObject& root, std::string_view key, bool fallback, bool wanted, std::string_view why) {
  bool value = fallback;
  STAMEN_RETURN_IF_ERROR(root.Optional(key, &value));
  if (value == wanted) return Status();
  return root.Error(key, std::string(value ? "is true" : "is false") + (root.Has(key) ? "" : " (the remote code's default)") +
                             "; " + std::string(why));
}

// nomic-embed-text-v2-moe's experts, in the hub's format. The remote code (nomic-bert-2048's
// NomicBertEncoder and Block) builds an expert layer at index i when num_experts > 0,
// moe_every_n_layers > 0 and i % moe_every_n_layers == 1 (so 1 builds none), in megablocks'
// tensor layout (moe_impl "megablocks"); its NomicMoELayer (as vLLM's bert_with_rope.py and
// TEI's nomic.rs restate it) computes router logits x·W_routerᵀ, a softmax over all experts,
// keeps the top moe_top_k as they are, weights each kept expert's gelu(x·W1_eᵀ)·W2_e by its
// probability and adds one bias after the sum.
Status ReadExperts(const JsonObject& root, ModelConfig* config) {
  int64_t experts = 0;
  STAMEN_RETURN_IF_ERROR(root.Optional("num_experts", &experts));
  if (experts < 0) return root.Error("num_experts", "must not be negative");
  if (experts == 0) return Status();  // a dense model, whatever moe_every_n_layers says
  int64_t every = 0;
  STAMEN_RETURN_IF_ERROR(root.Optional("moe_every_n_layers", &every));
  if (every < 2) {
    return root.Error("moe_every_n_layers", "is " + std::to_string(every) + " with " + std::to_string(experts) +
                                                " experts: the remote code then builds no expert layer (it takes "
                                                "layer i when i % moe_every_n_layers == 1); at least 2 is supported");
  }
  if (config->gated_feed_forward) {
    return root.Error("activation_function", "is 'swiglu' with experts; only gelu experts (megablocks' plain "
                                             "mlp, w1 and w2) are supported, as nomic-embed-text-v2-moe has");
  }
  std::string implementation = "megablocks";
  STAMEN_RETURN_IF_ERROR(root.Optional("moe_impl", &implementation));
  if (implementation != "megablocks") {
    return root.Error("moe_impl", "is '" + implementation +
                                      "'; only 'megablocks' (experts.mlp.w1 / w2 and experts.bias) is supported");
  }
  int64_t top_k = 0;
  STAMEN_RETURN_IF_ERROR(root.Required("moe_top_k", &top_k));
  if (top_k < 1 || top_k > experts) {
    return root.Error("moe_top_k", "is " + std::to_string(top_k) + "; it must be between 1 and num_experts (" +
                                       std::to_string(experts) + ")");
  }
  // megablocks divides the kept weights by their p-norm when this is a number; NomicMoELayer as
  // restated never does, and nomic-embed-text-v2-moe says false.
  bool normalize = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("moe_normalize_expert_weights", &normalize));
  if (normalize) {
    return root.Error("moe_normalize_expert_weights", "is true; only unnormalised expert weights are supported");
  }
  int64_t shared = 0;
  STAMEN_RETURN_IF_ERROR(root.Optional("num_shared_experts", &shared));
  if (shared != 0) return root.Error("num_shared_experts", "is " + std::to_string(shared) + "; only 0 is supported");
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "expert_choice_router", false, false,
                                     "only token-choice routing (each token picks its experts) is supported"));
  int64_t divisor = 1;
  STAMEN_RETURN_IF_ERROR(root.Optional("ffn_div", &divisor));
  if (divisor != 1) {
    return root.Error("ffn_div", "is " + std::to_string(divisor) + "; only experts as wide as n_inner (1) are supported");
  }
  config->num_experts = experts;
  config->moe_top_k = top_k;
  config->moe_every_n_layers = every;
  return Status();
}

// The settings of a config in the hub's format (n_embd, …).
Status ReadRemoteCodeSettings(const JsonObject& root, ModelConfig* config) {
  std::string activation = "gelu_new";  // GPT2Config's default
  STAMEN_RETURN_IF_ERROR(root.Optional("activation_function", &activation));
  // The remote code's Block: "swiglu" is its GatedMLP with silu; "gelu" its plain MLP with
  // F.gelu (erf), nomic-embed-text-v2-moe's. Its other names (glu, geglu, quick_gelu, and
  // gelu_new, which it would run as erf gelu) have no checkpoint stamen was checked against.
  if (activation == "swiglu") {
    config->hidden_act = ops::Activation::kSilu;
    config->gated_feed_forward = true;
  } else if (activation == "gelu") {
    config->hidden_act = ops::Activation::kGeluErf;
    config->gated_feed_forward = false;
  } else {
    return root.Error("activation_function", "is '" + activation +
                                                 "'; only 'swiglu' (transformers' NomicBertModel: silu(x·W_fc12ᵀ) ⊙ "
                                                 "x·W_fc11ᵀ) and 'gelu' (nomic-embed-text-v2-moe: gelu(x·W_fc1ᵀ + b)) "
                                                 "are supported");
  }
  // GPT2Config's layer_norm_epsilon
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "layer_norm_epsilon", 1e-5, config));
  double fraction = 0.0;  // NomicBertConfig's default: no rotary at all
  STAMEN_RETURN_IF_ERROR(root.Optional("rotary_emb_fraction", &fraction));
  // The remote code rotates the first head_dim · fraction dimensions of each head (flash-attn's
  // apply_rotary_emb: rotate-half within them, frequencies over them) and passes the rest.
  const double rotated = static_cast<double>(config->head_dim) * fraction;
  const auto rotary_dim = static_cast<int64_t>(rotated);
  if (!(fraction > 0.0 && fraction <= 1.0) || static_cast<double>(rotary_dim) != rotated || rotary_dim % 2 != 0 ||
      rotary_dim < 4) {
    return root.Error("rotary_emb_fraction", "is " + std::to_string(fraction) + "; head_dim (" +
                                                 std::to_string(config->head_dim) +
                                                 ") times it must be an even whole number of at least 4 dimensions");
  }
  config->rotary_dim = rotary_dim;
  if (root.Has("rotary_emb_scale_base")) {  // xPos: no NomicBERT checkpoint sets it
    return root.Error("rotary_emb_scale_base", "is set; xPos-scaled rotary is not supported (only null)");
  }
  config->rope_theta = 1000.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("rotary_emb_base", &config->rope_theta));
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "rotary_emb_interleaved", false, false,
                                     "only rotate-half RoPE is supported, as transformers' NomicBertModel"));
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "prenorm", false, false, "only post-norm NomicBERT is supported"));
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "parallel_block", false, false, "only sequential blocks are supported"));
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "use_rms_norm", false, false, "only LayerNorm is supported"));
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "causal", false, false, "only bidirectional NomicBERT is supported"));
  // SwiGLU NomicBERT (v1, v1.5) has no biases, gelu NomicBERT (v2-moe) has them all: qkv_proj_bias
  // puts one on Wqkv and out_proj, mlp_fc1_bias / mlp_fc2_bias on fc1 / fc2 (not on the experts,
  // which share one output bias). The mixed cases have no checkpoint.
  const bool biases = !config->gated_feed_forward;
  const std::string_view why = biases ? "gelu NomicBERT is supported with every bias on, as nomic-embed-text-v2-moe"
                                      : "only SwiGLU NomicBERT without biases is supported (transformers' "
                                        "NomicBertModel)";
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "qkv_proj_bias", true, biases, why));
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "mlp_fc1_bias", true, biases, why));
  STAMEN_RETURN_IF_ERROR(RequireBool(root, "mlp_fc2_bias", true, biases, why));
  config->attention_bias = biases;
  config->feed_forward_bias = biases;
  STAMEN_RETURN_IF_ERROR(ReadExperts(root, config));
  // Sequences run up to max_position_embeddings when the config gives it (the hub's configs
  // carry it since transformers 5), else n_positions (read as the shape).
  STAMEN_RETURN_IF_ERROR(root.Optional("max_position_embeddings", &config->max_position_embeddings));
  int64_t trained = 2048;
  STAMEN_RETURN_IF_ERROR(root.Optional("max_trained_positions", &trained));
  if (trained <= 0) return root.Error("max_trained_positions", "must be positive");
  // rotary_scaling_factor f (nomic-embed-text-v1's card passes 2 for 8,192 tokens): the remote
  // code's NomicBertDynamicNTKRotaryEmbedding rotates a sequence longer than
  // max_trained_positions with a base stretched by its length (kDynamicNtk). null or 0: none.
  // Absent, the remote config class's default applies, which was 1.0 and is now None in nomic's
  // code: the two differ only beyond max_trained_positions, so sequences stop there.
  simdjson::dom::element stored;
  if (root.raw()["rotary_scaling_factor"].get(stored) != simdjson::SUCCESS) {
    config->max_position_embeddings = std::min(config->max_position_embeddings, trained);
    return Status();
  }
  double scaling_factor = 0.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("rotary_scaling_factor", &scaling_factor));
  if (scaling_factor == 0.0) return Status();
  if (!(scaling_factor >= 1.0)) return root.Error("rotary_scaling_factor", "must be at least 1, or null");
  config->rope_scaling = {.factor = static_cast<float>(scaling_factor),
                          .original_max_position_embeddings = static_cast<float>(trained),
                          .type = ops::RopeScalingType::kDynamicNtk};
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  config->gated_feed_forward = true;
  config->feed_forward_bias = false;
  config->attention_bias = false;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadTypeVocabularySize(root, 2, 1, config));
  if (config->head_dim * config->num_attention_heads != config->hidden_size) {
    return root.Error("head_dim", "must be hidden_size / num_attention_heads for NomicBERT");
  }
  config->remote_code_tensors = true;  // the hub's and save_pretrained's names (rotary_encoder.cc)
  if (root.Has("n_embd")) {
    STAMEN_RETURN_IF_ERROR(ReadRemoteCodeSettings(root, config));
  } else {
    // transformers' NomicBertConfig has no experts; nomic-embed-text-v2-moe ships the hub's format.
    for (const std::string_view key : {std::string_view("moe_every_n_layers"), std::string_view("num_experts")}) {
      int64_t value = 0;
      STAMEN_RETURN_IF_ERROR(root.Optional(key, &value));
      if (value > 0) {
        return root.Error(key, "is " + std::to_string(value) +
                                   " in transformers' config format (hidden_size, …): experts are read from the "
                                   "hub's remote-code config (n_embd, …) only");
      }
    }
    STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "silu", config));
    // NomicBertConfig's layer_norm_eps
    STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "layer_norm_eps", 1e-12, config));
    config->rope_theta = 1000.0;  // NomicBertConfig's default_theta
  }
  // rope_parameters (transformers 5) wins over rotary_emb_base where a config has both.
  STAMEN_RETURN_IF_ERROR(family_settings::ReadRope(root, config, /*dynamic_ntk=*/true));
  if (!root.Has("n_embd") && config->rope_scaling.type == ops::RopeScalingType::kDynamicNtk &&
      config->rope_scaling.factor > 0.0f) {
    // transformers' rope_type "dynamic": max_position_embeddings is the trained length and
    // transformers sets no bound beyond it; stamen serves up to factor times it.
    config->max_position_embeddings =
        static_cast<int64_t>(config->rope_scaling.factor * static_cast<double>(config->max_position_embeddings));
  }
  return Status();
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"NomicBertModel", ModelHead::kNone, "", "nomic_bert"},
};

// The hub's auto_map: nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig and
// --modeling_hf_nomic_bert.NomicBertModel (AutoModel).
constexpr std::string_view kRemoteCodeClasses[] = {"NomicBertConfig", "NomicBertModel"};

// The remote code's config is a GPT2Config.
constexpr ShapeKeys kRemoteCodeShapeKeys{.hidden_size = "n_embd",
                                         .num_hidden_layers = "n_layer",
                                         .num_attention_heads = "n_head",
                                         .intermediate_size = "n_inner",
                                         .max_position_embeddings = "n_positions"};

}  // namespace

extern const FamilyConfig kNomicBertFamilyConfig{.architectures = kArchitectures,
                                                 .remote_code_shape_keys = &kRemoteCodeShapeKeys,
                                                 .read_settings = ReadSettings,
                                                 .remote_code_classes = kRemoteCodeClasses};

}  // namespace stamen::engine
