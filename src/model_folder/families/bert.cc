// What config.json says of BERT, RoBERTa, XLM-RoBERTa and CamemBERT (engine/models/bert.cc runs them).
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// Settings of BERT-style encoders.
Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "gelu", config));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "layer_norm_eps", 1e-12, config));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadTypeVocabularySize(root, 2, 1, config));
  std::string position_type = "absolute";
  STAMEN_RETURN_IF_ERROR(root.Optional("position_embedding_type", &position_type));
  if (position_type != "absolute") {
    return root.Error("position_embedding_type", "is '" + position_type + "'; only 'absolute' is supported");
  }
  return Status();
}

Status ReadRobertaSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(ReadSettings(root, config));
  return family_settings::ReadPositionsAfterPad(root, config);
}

constexpr ArchitectureDefinition kBertArchitectures[] = {
    {"BertModel", ModelHead::kNone, "", "bert"},
    {"BertForSequenceClassification", ModelHead::kSequenceClassification, "bert.", ""},
    {"BertForMaskedLM", ModelHead::kMaskedLm, "bert.", ""},
    // Stanford ColBERT checkpoints (colbertv2.0): BERT under "bert.", its "linear" projection
    // read as a Dense module (stanford_colbert.cc).
    {kStanfordColbertArchitecture, ModelHead::kNone, "bert.", ""},
};

constexpr ArchitectureDefinition kRobertaArchitectures[] = {
    {"XLMRobertaModel", ModelHead::kNone, "", "xlm-roberta"},
    {"XLMRobertaForSequenceClassification", ModelHead::kSequenceClassification, "roberta.", ""},
    {"XLMRobertaForMaskedLM", ModelHead::kMaskedLm, "roberta.", ""},
    {"RobertaModel", ModelHead::kNone, "", "roberta"},
    {"RobertaForSequenceClassification", ModelHead::kSequenceClassification, "roberta.", ""},
    {"RobertaForMaskedLM", ModelHead::kMaskedLm, "roberta.", ""},
    // CamemBERT is RoBERTa with its own vocabulary.
    {"CamembertModel", ModelHead::kNone, "", "camembert"},
    {"CamembertForSequenceClassification", ModelHead::kSequenceClassification, "roberta.", ""},
};

}  // namespace

extern const FamilyConfig kBertFamilyConfig{
    .architectures = kBertArchitectures, .read_settings = ReadSettings};
extern const FamilyConfig kRobertaFamilyConfig{
    .architectures = kRobertaArchitectures, .read_settings = ReadRobertaSettings};

}  // namespace stamen::engine
