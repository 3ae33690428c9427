// What config.json says of DeBERTa-v2/v3 (engine/models/deberta.cc runs it).
#include <cctype>
#include <string>
#include <vector>

#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// The entries of a "|"-separated string or of an array of strings, lower-cased and trimmed, as
// transformers reads pos_att_type and norm_rel_ebd.
Status ReadNameList(const JsonObject& root, std::string_view key, std::vector<std::string>* names) {
  names->clear();
  if (!root.Has(key)) return Status();
  auto add = [&](std::string_view text) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('|', start);
      if (end == std::string_view::npos) end = text.size();
      std::string name;
      for (char c : text.substr(start, end - start)) {
        if (c != ' ' && c != '\t') name.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      }
      if (!name.empty()) names->push_back(std::move(name));
      start = end + 1;
    }
  };
  simdjson::dom::element value;
  if (root.raw()[key].get(value) != simdjson::SUCCESS) return root.Error(key, "cannot be read");
  std::string_view text;
  simdjson::dom::array array;
  if (value.get(text) == simdjson::SUCCESS) {
    add(text);
  } else if (value.get(array) == simdjson::SUCCESS) {
    for (simdjson::dom::element element : array) {
      if (element.get(text) != simdjson::SUCCESS) return root.Error(key, "must hold strings");
      add(text);
    }
  } else {
    return root.Error(key, "must be a string or an array of strings");
  }
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "gelu", config));
  // DebertaV2Config's default
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "layer_norm_eps", 1e-7, config));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadTypeVocabularySize(root, 0, 0, config));

  DisentangledAttentionConfig& settings = config->disentangled;
  settings = {};
  STAMEN_RETURN_IF_ERROR(root.Optional("relative_attention", &settings.relative_attention));
  std::vector<std::string> names;
  STAMEN_RETURN_IF_ERROR(ReadNameList(root, "pos_att_type", &names));
  for (const std::string& name : names) {
    if (name == "c2p") {
      settings.content_to_position = true;
    } else if (name == "p2c") {
      settings.position_to_content = true;
    } else {
      return root.Error("pos_att_type", "names '" + name + "'; only 'c2p' and 'p2c' are supported");
    }
  }
  settings.max_relative_positions = -1;
  STAMEN_RETURN_IF_ERROR(root.Optional("max_relative_positions", &settings.max_relative_positions));
  if (settings.max_relative_positions < 1) settings.max_relative_positions = config->max_position_embeddings;
  settings.position_buckets = -1;
  STAMEN_RETURN_IF_ERROR(root.Optional("position_buckets", &settings.position_buckets));
  if (settings.position_buckets <= 0) settings.position_buckets = 0;
  if (settings.relative_attention && settings.position_buckets > 0 &&
      settings.max_relative_positions - 1 <= settings.position_buckets / 2) {
    return root.Error("max_relative_positions", "must exceed position_buckets / 2 + 1");
  }
  if (settings.RelativeSpan() > (int64_t{1} << 24)) return root.Error("max_relative_positions", "is too large");
  STAMEN_RETURN_IF_ERROR(root.Optional("share_att_key", &settings.share_att_key));
  STAMEN_RETURN_IF_ERROR(ReadNameList(root, "norm_rel_ebd", &names));
  for (const std::string& name : names) {
    if (name == "layer_norm") {
      settings.norm_relative_embeddings = true;
    } else if (name != "none") {
      return root.Error("norm_rel_ebd", "names '" + name + "'; only 'layer_norm' and 'none' are supported");
    }
  }
  STAMEN_RETURN_IF_ERROR(root.Optional("position_biased_input", &settings.position_biased_input));

  // Options of DeBERTa checkpoints this engine does not run: refused by name, not ignored.
  int64_t conv_kernel_size = 0;
  STAMEN_RETURN_IF_ERROR(root.Optional("conv_kernel_size", &conv_kernel_size));
  if (conv_kernel_size > 0) {
    return root.Error("conv_kernel_size", "is " + std::to_string(conv_kernel_size) +
                                              "; DeBERTa's convolution layer (ConvLayer) is not supported");
  }
  for (std::string_view key : {"embedding_size", "pooler_hidden_size"}) {
    int64_t size = config->hidden_size;
    STAMEN_RETURN_IF_ERROR(root.Optional(key, &size));
    if (size != config->hidden_size) return root.Error(key, "must equal hidden_size (only that is supported)");
  }
  int64_t head_size = config->head_dim;
  STAMEN_RETURN_IF_ERROR(root.Optional("attention_head_size", &head_size));
  if (head_size != config->head_dim) return root.Error("attention_head_size", "must be hidden_size / num_attention_heads");

  std::string pooler_activation = "gelu";
  STAMEN_RETURN_IF_ERROR(root.Optional("pooler_hidden_act", &pooler_activation));
  const auto activation = ops::ActivationFromName(pooler_activation);
  if (!activation.has_value()) {
    return root.Error("pooler_hidden_act", "names unsupported activation '" + pooler_activation + "'");
  }
  config->classifier_activation = *activation;
  return Status();
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"DebertaV2Model", ModelHead::kNone, "", "deberta-v2"},
    {"DebertaV2ForSequenceClassification", ModelHead::kSequenceClassification, "deberta.", ""},
};

}  // namespace

extern const FamilyConfig kDebertaFamilyConfig{
    .architectures = kArchitectures, .read_settings = ReadSettings};

}  // namespace stamen::engine
