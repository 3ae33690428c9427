// The config side of the family registry: for each model family, how config.json names its
// architectures, which keys hold its shapes and how to read its own settings; one table of
// them (family_registry.cc, from the list in families.inc), one definition per family
// (families/*.cc). ReadModelConfig goes through it, so the gateway reads any folder the engine
// runs without linking the engine (engine/models/family.h holds how each family runs).
#pragma once

#include <span>
#include <string_view>

#include "common/status.h"
#include "model_folder/json_document.h"
#include "model_folder/model_config.h"

namespace stamen::engine {

struct ArchitectureDefinition {
  std::string_view name;  // as config.json's "architectures" names it
  ModelHead head = ModelHead::kNone;
  // Where save_pretrained puts the backbone's tensors for this class ("bert." under
  // BertForSequenceClassification); loading also accepts every prefix of the family.
  std::string_view weight_prefix;
  // The config.json model_type this is transformers' default architecture of, for configs
  // without "architectures"; empty when none.
  std::string_view default_for_model_type;
};

// The config.json keys of the common shapes (DistilBERT names them differently).
struct ShapeKeys {
  std::string_view hidden_size = "hidden_size";
  std::string_view num_hidden_layers = "num_hidden_layers";
  std::string_view num_attention_heads = "num_attention_heads";
  std::string_view intermediate_size = "intermediate_size";
  std::string_view max_position_embeddings = "max_position_embeddings";
};

// The family ModelFamily::kName's config definition is named kNameFamilyConfig (families.inc).
struct FamilyConfig {
  std::span<const ArchitectureDefinition> architectures;
  bool decoder = false;  // uses RoPE, may attend causally, pools the last token by default
  ShapeKeys shape_keys = {};
  // Another set of keys some configs of the family use instead (NomicBERT's hub configs: n_embd,
  // n_layer, …): read when the config lacks shape_keys.hidden_size and has this set's.
  const ShapeKeys* remote_code_shape_keys = nullptr;
  // The family's own keys (activation, norms, positions), after the common shapes are read.
  Status (*read_settings)(const JsonObject& root, ModelConfig* config);
  // The remote-code classes (auto_map's "module.Class", by class name) this family implements:
  // a folder whose auto_map names any other class for its config or the model class it is
  // loaded through is refused (ReadModelConfig), never run as the model_type's base family.
  std::span<const std::string_view> remote_code_classes = {};
  // Base architectures a folder of this family names in config.json while its auto_map loads one
  // of remote_code_classes that is an architecture of this family (jina-embeddings-v3 names
  // "XLMRobertaModel" and loads XLMRobertaLoRA): such a folder runs as the loaded class. Another
  // architecture named beside this family's auto_map is refused (model_config.cc).
  std::span<const std::string_view> remote_code_named_architectures = {};
  // The architecture a Stanford ColBERT checkpoint (config.json naming HF_ColBERT) runs as when
  // its auto_map's AutoConfig is one of remote_code_classes: the ColBERT library saves HF_ColBERT
  // over whichever backbone it trained (jina-colbert-v2: jina's XLM-RoBERTa). Empty: none.
  std::string_view stanford_colbert_architecture = {};
};

// Every family stamen reads, indexed by ModelFamily, in the order error messages list their
// architectures.
std::span<const FamilyConfig* const> FamilyConfigs();
// The config definition of `family`; every value of ModelFamily has one (a missing one fails to link).
const FamilyConfig& FamilyConfigOf(ModelFamily family);
// The family whose definition `config` is (its row in the table: families.inc names both alike).
ModelFamily ModelFamilyOf(const FamilyConfig& config);
// The family and architecture definition of an architecture name; nullptr when unsupported.
const FamilyConfig* FindArchitecture(std::string_view name, const ArchitectureDefinition** architecture);

// Config readers shared by families.
namespace family_settings {
// hidden_act (or `key`), defaulting to `fallback`.
Status ReadActivation(const JsonObject& root, std::string_view key, std::string_view fallback, ModelConfig* config);
// The norms' epsilon from `key` (layer_norm_eps, rms_norm_eps, …), defaulting to `fallback`.
Status ReadNormEps(const JsonObject& root, std::string_view key, double fallback, ModelConfig* config);
// type_vocab_size, defaulting to `fallback`, at least `minimum` (0: a model may have no token
// type table).
Status ReadTypeVocabularySize(const JsonObject& root, int64_t fallback, int64_t minimum, ModelConfig* config);
// rope_theta, or transformers ≥ 5's {"rope_parameters": {"rope_theta", "rope_type"}}: plain RoPE
// or llama3, and with `dynamic_ntk` rope_type "dynamic" (transformers' dynamic NTK scaling, its
// trained length max_position_embeddings). A partial_rotary_factor other than 1 is refused: the
// families that read this rotate whole heads, as transformers does for them.
Status ReadRope(const JsonObject& root, ModelConfig* config, bool dynamic_ntk = false);
// pad_token_id when given.
Status ReadPadToken(const JsonObject& root, ModelConfig* config);
// RoBERTa-style absolute positions, counted from pad_token_id (default 1) + 1.
Status ReadPositionsAfterPad(const JsonObject& root, ModelConfig* config);
// One layer type's RoPE base from transformers ≥ 5's rope_parameters[layer_type] (Gemma3,
// ModernBERT), when given; only plain RoPE.
Status ReadLayerTypeRope(const JsonObject& rope_parameters, std::string_view layer_type, double* theta);
// layer_types (transformers ≥ 5: "full_attention" or "sliding_attention" for every layer) into
// config->sliding_window_layers; `*found` is false when the config has none.
Status ReadLayerTypes(const JsonObject& root, ModelConfig* config, bool* found);
}  // namespace family_settings

}  // namespace stamen::engine
