// What config.json says of the Qwen2, Qwen3, Llama and Mistral decoders, and of two
// bidirectional encoders built from them (engine/models/qwen.cc runs them all):
// pplx-embed-v1 (model_type bidirectional_pplx_qwen3: Qwen3 attending bidirectionally, its
// pooled vectors served as round(127·tanh(x))) and llama-nemotron-embed (llama_bidirec: Llama,
// usually with Llama 3's RoPE scaling, attending bidirectionally, mean-pooled; its reranker
// llama-nemotron-rerank scores the mean-pooled state); and voyage-4-nano, a Qwen3 folder whose
// remote Qwen3BidirectionalModel attends bidirectionally and projects its last hidden state.
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "silu", config));
  if (config->hidden_act != ops::Activation::kSilu) return root.Error("hidden_act", "must be silu");
  config->gated_feed_forward = true;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "rms_norm_eps", 1e-6, config));
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

// Qwen3: also voyage-4-nano's remote Qwen3BidirectionalModel (modeling_qwen3_bidirectional.py),
// transformers' Qwen3Model with every layer's is_causal off and a mask of the padding alone, then
// `linear` [num_labels, hidden] without bias on its last hidden state (ReadModelFolder adds it as
// the first Dense module: the mean of the projected tokens is the projection of their mean).
// Its config.json says use_bidirectional_attention: true, the key TEI's qwen3.rs reads on any
// Qwen3 folder; stamen reads it likewise.
Status ReadQwen3Settings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(ReadSettings(root, config));
  bool bidirectional = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("use_bidirectional_attention", &bidirectional));
  if (config->architecture == kQwen3BidirectionalArchitecture) {
    if (root.Has("use_bidirectional_attention") && !bidirectional) {
      return root.Error("use_bidirectional_attention",
                        "is false, but Qwen3BidirectionalModel always attends bidirectionally");
    }
    bidirectional = true;
  }
  if (bidirectional) config->causal = false;
  return Status();
}

// pplx-embed-v1: its remote PPLXQwen3Model is transformers' Qwen3Model with every layer's
// is_causal off (the config says use_bidirectional_attention: true); TEI's pplx1.rs serves
// round(127·tanh(mean)).
Status ReadPplxSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(ReadSettings(root, config));
  bool bidirectional = true;
  STAMEN_RETURN_IF_ERROR(root.Optional("use_bidirectional_attention", &bidirectional));
  if (!bidirectional) return root.Error("use_bidirectional_attention", "must be true (pplx-embed attends bidirectionally)");
  config->causal = false;
  config->pooled_tanh_int8 = true;
  return Status();
}

// llama-nemotron-embed: the remote LlamaBidirectionalModel is LlamaModel with the causal mask
// off; config.json's "pooling" says how its pipeline pools ("avg": the mean, stamen's default
// for a bidirectional decoder). llama-nemotron-rerank (LlamaBidirectionalForSequenceClassification,
// NVIDIA's llama_bidirectional_model.py and NeMo Automodel's copy of it): the same backbone, its
// last hidden states pooled by "pooling" over the sequence's tokens ("avg": their mean), then
// `score` [num_labels, hidden] without bias, the logits divided by config "temperature"
// (PreNormDecoderModel::Classify pools this family's sequences by their mean). /rerank gives it each
// pair as its card does: one text, "question:{query} \n \n passage:{document}".
Status ReadLlamaBidirectionalSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(ReadSettings(root, config));
  config->causal = false;
  std::string pooling = "avg";
  STAMEN_RETURN_IF_ERROR(root.Optional("pooling", &pooling));
  if (pooling != "avg") return root.Error("pooling", "is '" + pooling + "'; only 'avg' (mean pooling) is supported");
  // The remote code divides the head's logits by it; stamen's score head does not scale.
  double temperature = 1.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("temperature", &temperature));
  if (config->head == ModelHead::kSequenceClassification && temperature != 1.0) {
    return root.Error("temperature", "is " + std::to_string(temperature) + "; only 1.0 (logits unscaled) is supported");
  }
  if (config->head == ModelHead::kSequenceClassification) {
    // The reranker's card tokenizes f"question:{query} \n \n passage:{passage}" as one text (with the
    // tokenizer's begin-of-text token); a pair encoding is not what it was trained on.
    config->pair_text_before_query = "question:";
    config->pair_text_before_document = " \n \n passage:";
  }
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
    // voyage-4-nano: the backbone under "model.", `linear` beside it.
    {kQwen3BidirectionalArchitecture, ModelHead::kNone, "model.", ""},
};
// voyage-4-nano's auto_map: AutoModel → modeling_qwen3_bidirectional.Qwen3BidirectionalModel (its
// config class is transformers' Qwen3Config). A folder naming Qwen3Model or Qwen3ForCausalLM in
// "architectures" while its auto_map loads that class runs as that class.
constexpr std::string_view kQwen3RemoteCode[] = {kQwen3BidirectionalArchitecture};
constexpr std::string_view kQwen3RemoteCodeNamedArchitectures[] = {"Qwen3Model", "Qwen3ForCausalLM"};

constexpr ArchitectureDefinition kPplxQwen3Architectures[] = {
    {"PPLXQwen3Model", ModelHead::kNone, "", "bidirectional_pplx_qwen3"},
};
// auto_map: configuration.PPLXQwen3Config, modeling.PPLXQwen3Model.
constexpr std::string_view kPplxQwen3RemoteCode[] = {"PPLXQwen3Config", "PPLXQwen3Model"};

constexpr ArchitectureDefinition kLlamaBidirectionalArchitectures[] = {
    {"LlamaBidirectionalModel", ModelHead::kNone, "", "llama_bidirec"},
    // llama-nemotron-rerank: the backbone under "model.", `score` beside it.
    {"LlamaBidirectionalForSequenceClassification", ModelHead::kSequenceClassification, "model.", ""},
};
// auto_map: llama_bidirectional_model.LlamaBidirectionalConfig, .LlamaBidirectionalModel and
// (the reranker) .LlamaBidirectionalForSequenceClassification.
constexpr std::string_view kLlamaBidirectionalRemoteCode[] = {"LlamaBidirectionalConfig", "LlamaBidirectionalModel",
                                                              "LlamaBidirectionalForSequenceClassification"};

}  // namespace

// Qwen2, Llama and Mistral share their settings (Qwen3 reads one key more).
constexpr FamilyConfig DecoderFamily(std::span<const ArchitectureDefinition> architectures) {
  return {.architectures = architectures, .decoder = true, .read_settings = ReadSettings};
}

extern const FamilyConfig kQwen2FamilyConfig = DecoderFamily(kQwen2Architectures);
extern const FamilyConfig kQwen3FamilyConfig{.architectures = kQwen3Architectures,
                                             .decoder = true,
                                             .read_settings = ReadQwen3Settings,
                                             .remote_code_classes = kQwen3RemoteCode,
                                             .remote_code_named_architectures = kQwen3RemoteCodeNamedArchitectures};
extern const FamilyConfig kLlamaFamilyConfig = DecoderFamily(kLlamaArchitectures);
extern const FamilyConfig kMistralFamilyConfig = DecoderFamily(kMistralArchitectures);

// The bidirectional encoders built from Qwen3 and Llama.
extern const FamilyConfig kPplxQwen3FamilyConfig{.architectures = kPplxQwen3Architectures,
                                                 .decoder = true,
                                                 .read_settings = ReadPplxSettings,
                                                 .remote_code_classes = kPplxQwen3RemoteCode};
extern const FamilyConfig kLlamaBidirectionalFamilyConfig{.architectures = kLlamaBidirectionalArchitectures,
                                                          .decoder = true,
                                                          .read_settings = ReadLlamaBidirectionalSettings,
                                                          .remote_code_classes = kLlamaBidirectionalRemoteCode};

}  // namespace stamen::engine
