// What config.json says of EuroBERT (engine/models/qwen.cc runs it with the Llama decoders):
// Llama's blocks attending bidirectionally, as transformers' EuroBertModel and the hub's remote code
// (EuroBERT/EuroBERT-210m's modeling_eurobert.py) define it. The hub's folders name
// EuroBertForMaskedLM (the backbone under "model.", its lm_head unread) and rope_theta; transformers
// 5's save_pretrained writes rope_parameters. EuroBertForSequenceClassification adds a head
// (dense → GELU → classifier) pooled as its classifier_pooling says.
#include <string>
#include <string_view>

#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// EuroBertForSequenceClassification's pooling, as transformers 5.25 names it (classifier_pooling,
// default "late") or the hub's remote code does (clf_pooling, the same values and forward); the
// head is always dense → nn.GELU() (erf) → classifier, both with biases:
//   "bos"  the first token's state through the head;
//   "mean" the mean of the sequence's states through the head;
//   "late" the head on every token, its logits averaged over the sequence. The classifier is
//          linear, so that is the head's output layer on the mean of the activated dense outputs,
//          which the engine computes (config->classifier_late_pooling).
// transformers averages over the attention mask's tokens; a ragged batch has no padding, so every
// sequence's own tokens are exactly those.
Status ReadClassifierPooling(const JsonObject& root, ModelConfig* config) {
  const std::string_view key = root.Has("classifier_pooling") || !root.Has("clf_pooling") ? "classifier_pooling"
                                                                                          : "clf_pooling";
  std::string pooling = "late";  // EuroBertConfig's default
  STAMEN_RETURN_IF_ERROR(root.Optional(key, &pooling));
  if (pooling == "bos") {
    config->classifier_pooling = ops::PoolingMode::kCls;
  } else if (pooling == "mean" || pooling == "late") {
    config->classifier_pooling = ops::PoolingMode::kMean;
    config->classifier_late_pooling = pooling == "late";
  } else {
    return root.Error(key, "must be \"bos\", \"mean\" or \"late\" (EuroBertForSequenceClassification's poolings), not '" +
                               pooling + "'");
  }
  config->classifier_activation = ops::Activation::kGeluErf;
  config->classifier_bias = true;
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "silu", config));
  config->gated_feed_forward = true;
  // EuroBertConfig's rms_norm_eps
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "rms_norm_eps", 1e-5, config));
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
  STAMEN_RETURN_IF_ERROR(root.Optional("tie_word_embeddings", &config->tie_word_embeddings));
  if (config->head != ModelHead::kSequenceClassification) return Status();
  return ReadClassifierPooling(root, config);
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"EuroBertModel", ModelHead::kNone, "", "eurobert"},
    {"EuroBertForMaskedLM", ModelHead::kNone, "model.", ""},  // as the hub ships it; embedding use ignores lm_head
    {"EuroBertForSequenceClassification", ModelHead::kSequenceClassification, "model.", ""},
};

// The hub's auto_map: configuration_eurobert.EuroBertConfig, modeling_eurobert.EuroBertModel (AutoModel),
// modeling_eurobert.EuroBertForSequenceClassification (its fine-tunes' AutoModelForSequenceClassification:
// the forward of transformers' class, with clf_pooling for classifier_pooling).
constexpr std::string_view kRemoteCodeClasses[] = {"EuroBertConfig", "EuroBertModel",
                                                   "EuroBertForSequenceClassification"};

}  // namespace

// A decoder in the registry's sense (RoPE, pre-norm), bidirectional, so it pools the mean by default.
extern const FamilyConfig kEuroBertFamilyConfig{.architectures = kArchitectures,
                                                .decoder = true,
                                                .read_settings = ReadSettings,
                                                .remote_code_classes = kRemoteCodeClasses};

}  // namespace stamen::engine
