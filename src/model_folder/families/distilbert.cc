// What config.json says of DistilBERT (engine/models/distilbert.cc runs it).
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "activation", "gelu", config));
  config->norm_eps = 1e-12;  // fixed in transformers' DistilBERT, not a config key
  // Positions count from 0: config.position_offset stays 0.
  config->classifier_activation = ops::Activation::kRelu;  // the head's, fixed too
  // Sinusoidal position tables are saved as weights too, so both kinds load alike.
  return Status();
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"DistilBertModel", ModelHead::kNone, "", "distilbert"},
    {"DistilBertForSequenceClassification", ModelHead::kSequenceClassification, "distilbert.", ""},
    {"DistilBertForMaskedLM", ModelHead::kMaskedLm, "distilbert.", ""},
};

}  // namespace

extern const FamilyConfig kDistilBertFamilyConfig{
    .architectures = kArchitectures,
    .shape_keys = {.hidden_size = "dim", .num_hidden_layers = "n_layers", .num_attention_heads = "n_heads",
                   .intermediate_size = "hidden_dim"},
    .read_settings = ReadSettings};

}  // namespace stamen::engine
