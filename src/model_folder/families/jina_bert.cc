// What config.json says of JinaBERT (jina-embeddings-v2-small/base-en and its language pairs,
// jina-reranker-v1-turbo/tiny-en; engine/models/jina_bert.cc runs it): BERT's post-norm encoder
// with ALiBi instead of position embeddings and a gated feed-forward with a LayerNorm of its own,
// as jinaai/jina-bert-implementation's remote code (configuration_bert.JinaBertConfig,
// modeling_bert.JinaBertModel / JinaBertForSequenceClassification) defines it. The hub's
// folders say model_type "bert" and name the remote classes in auto_map; transformers 5.25 has
// no JinaBERT of its own, so these folders are read only here, never as BERT.
//
// jina-embeddings-v2-base-code's folders name the same class names from another repository,
// jinaai/jina-bert-v2-qk-post-norm, whose layers differ (LayerNorms on q and k, a second norm
// after the attention's, the MLP's up_gated_layer / down_layer): config.qk_post_norm, told by
// that repository's name in auto_map.
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// The repository of the qk-post-norm variant, as auto_map names it ("repo--module.Class").
constexpr std::string_view kQkPostNormRepository = "jina-bert-v2-qk-post-norm";

// Whether auto_map's AutoConfig names the qk-post-norm repository.
Status ReadQkPostNorm(const JsonObject& root, bool* qk_post_norm) {
  JsonObject auto_map = root;
  bool has_auto_map = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("auto_map", &auto_map, &has_auto_map));
  std::string target;
  if (has_auto_map) STAMEN_RETURN_IF_ERROR(auto_map.Optional("AutoConfig", &target));
  *qk_post_norm = target.find(kQkPostNormRepository) != std::string::npos;
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(ReadQkPostNorm(root, &config->qk_post_norm));
  std::string positions;
  STAMEN_RETURN_IF_ERROR(root.Optional("position_embedding_type", &positions));
  if (positions != "alibi") {
    return root.Error("position_embedding_type", (positions.empty() ? std::string("is absent") : "is '" + positions + "'") +
                                                     "; only JinaBERT with 'alibi' is supported");
  }
  // The remote code's JinaBertGLUMLP picks its activation by feed_forward_type (hidden_act is
  // not read): GELU (erf) for geglu, ReLU for reglu; JinaBertConfig's default "original" is
  // BERT's plain feed-forward, which no released JinaBERT uses.
  std::string feed_forward = "original";
  STAMEN_RETURN_IF_ERROR(root.Optional("feed_forward_type", &feed_forward));
  if (feed_forward == "geglu") {
    config->hidden_act = ops::Activation::kGeluErf;
  } else if (feed_forward == "reglu") {
    config->hidden_act = ops::Activation::kRelu;
  } else {
    return root.Error("feed_forward_type", "is '" + feed_forward + "'; only 'geglu' and 'reglu' are supported");
  }
  config->gated_feed_forward = true;
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "layer_norm_eps", 1e-12, config));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadTypeVocabularySize(root, 2, 1, config));
  if (config->head_dim * config->num_attention_heads != config->hidden_size) {
    return root.Error("hidden_size", "must be head_dim × num_attention_heads for JinaBERT");
  }
  return Status();
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"JinaBertModel", ModelHead::kNone, "", ""},
    // As jina-embeddings-v2's folders name it: served through AutoModel (JinaBertModel), as
    // sentence-transformers loads it; there is no MLM head in those checkpoints.
    {"JinaBertForMaskedLM", ModelHead::kNone, "bert.", ""},
    {"JinaBertForSequenceClassification", ModelHead::kSequenceClassification, "bert.", ""},
};

// The hub's auto_map: jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig,
// --modeling_bert.JinaBertModel (AutoModel), --modeling_bert.JinaBertForSequenceClassification.
constexpr std::string_view kRemoteCodeClasses[] = {"JinaBertConfig", "JinaBertModel",
                                                   "JinaBertForSequenceClassification"};

}  // namespace

extern const FamilyConfig kJinaBertFamilyConfig{.architectures = kArchitectures,
                                                .read_settings = ReadSettings,
                                                .remote_code_classes = kRemoteCodeClasses};

}  // namespace stamen::engine
