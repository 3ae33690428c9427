// Reads config.json into ModelConfig: architecture lookup, defaults as transformers applies
// them, and checks that the shapes are consistent before any weight is touched.
#include "engine/model_config.h"

#include <string_view>

#include "engine/json_document.h"

namespace stamen::engine {
namespace {

struct ArchitectureInfo {
  std::string_view name;
  ModelFamily family;
  ModelHead head;
};

constexpr ArchitectureInfo kArchitectures[] = {
    {"BertModel", ModelFamily::kBert, ModelHead::kNone},
    {"BertForSequenceClassification", ModelFamily::kBert, ModelHead::kSequenceClassification},
    {"XLMRobertaModel", ModelFamily::kRoberta, ModelHead::kNone},
    {"XLMRobertaForSequenceClassification", ModelFamily::kRoberta, ModelHead::kSequenceClassification},
    {"RobertaModel", ModelFamily::kRoberta, ModelHead::kNone},
    {"RobertaForSequenceClassification", ModelFamily::kRoberta, ModelHead::kSequenceClassification},
    {"Qwen2Model", ModelFamily::kQwen2, ModelHead::kNone},
    {"Qwen2ForCausalLM", ModelFamily::kQwen2, ModelHead::kNone},  // embedding use ignores lm_head
    {"Qwen3Model", ModelFamily::kQwen3, ModelHead::kNone},
    {"Qwen3ForCausalLM", ModelFamily::kQwen3, ModelHead::kNone},
};

// transformers' default architecture for a model_type, for configs that omit "architectures".
std::string_view DefaultArchitecture(std::string_view model_type) {
  if (model_type == "bert") return "BertModel";
  if (model_type == "xlm-roberta") return "XLMRobertaModel";
  if (model_type == "roberta") return "RobertaModel";
  if (model_type == "qwen2") return "Qwen2Model";
  if (model_type == "qwen3") return "Qwen3Model";
  return "";
}

bool IsDecoder(ModelFamily family) { return family == ModelFamily::kQwen2 || family == ModelFamily::kQwen3; }

Status ReadArchitecture(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(root.Optional("model_type", &config->model_type));
  simdjson::dom::array architectures;
  if (root.Has("architectures")) {
    if (root.raw()["architectures"].get(architectures) != simdjson::SUCCESS || architectures.size() == 0) {
      return root.Error("architectures", "must be a non-empty list of names");
    }
    std::string_view name;
    if (architectures.at(0).get(name) != simdjson::SUCCESS) return root.Error("architectures", "must hold strings");
    config->architecture = std::string(name);
  } else {
    config->architecture = std::string(DefaultArchitecture(config->model_type));
    if (config->architecture.empty()) {
      return root.Error("architectures", "is missing and model_type '" + config->model_type + "' is not supported");
    }
  }
  for (const ArchitectureInfo& info : kArchitectures) {
    if (info.name == config->architecture) {
      config->family = info.family;
      config->head = info.head;
      return Status();
    }
  }
  std::string supported;
  for (const std::string& name : SupportedArchitectures()) supported += (supported.empty() ? "" : ", ") + name;
  return Status::Error(root.file() + ": architecture '" + config->architecture + "' is not supported (supported: " +
                       supported + ")");
}

Status ReadLabels(const JsonObject& root, ModelConfig* config) {
  JsonObject labels = root;
  bool has_labels = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("id2label", &labels, &has_labels));
  config->num_labels = has_labels ? static_cast<int64_t>(labels.raw().size()) : 2;  // transformers' default
  STAMEN_RETURN_IF_ERROR(root.Optional("num_labels", &config->num_labels));
  if (config->num_labels < 1 || config->num_labels > 1'000'000) {
    return root.Error(has_labels ? "id2label" : "num_labels", "must give at least one label");
  }
  config->id2label.clear();
  for (int64_t i = 0; i < config->num_labels; ++i) {
    std::string name = "LABEL_" + std::to_string(i);
    if (has_labels) STAMEN_RETURN_IF_ERROR(labels.Optional(std::to_string(i), &name));
    config->id2label.push_back(std::move(name));
  }
  return Status();
}

Status ReadShapes(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(root.Required("hidden_size", &config->hidden_size));
  STAMEN_RETURN_IF_ERROR(root.Required("num_hidden_layers", &config->num_hidden_layers));
  STAMEN_RETURN_IF_ERROR(root.Required("num_attention_heads", &config->num_attention_heads));
  STAMEN_RETURN_IF_ERROR(root.Required("intermediate_size", &config->intermediate_size));
  STAMEN_RETURN_IF_ERROR(root.Required("vocab_size", &config->vocab_size));
  auto positive = [&](std::string_view key, int64_t value) {
    return value > 0 ? Status() : root.Error(key, "must be positive, not " + std::to_string(value));
  };
  STAMEN_RETURN_IF_ERROR(positive("hidden_size", config->hidden_size));
  STAMEN_RETURN_IF_ERROR(positive("num_hidden_layers", config->num_hidden_layers));
  STAMEN_RETURN_IF_ERROR(positive("num_attention_heads", config->num_attention_heads));
  STAMEN_RETURN_IF_ERROR(positive("intermediate_size", config->intermediate_size));
  STAMEN_RETURN_IF_ERROR(positive("vocab_size", config->vocab_size));
  config->num_key_value_heads = config->num_attention_heads;
  STAMEN_RETURN_IF_ERROR(root.Optional("num_key_value_heads", &config->num_key_value_heads));
  if (config->num_key_value_heads <= 0 || config->num_attention_heads % config->num_key_value_heads != 0) {
    return root.Error("num_key_value_heads", "must divide num_attention_heads");
  }
  if (root.Has("head_dim")) {
    STAMEN_RETURN_IF_ERROR(root.Optional("head_dim", &config->head_dim));
  } else if (config->hidden_size % config->num_attention_heads != 0) {
    return root.Error("hidden_size", "is not a multiple of num_attention_heads");
  } else {
    config->head_dim = config->hidden_size / config->num_attention_heads;
  }
  STAMEN_RETURN_IF_ERROR(positive("head_dim", config->head_dim));
  if (IsDecoder(config->family) && config->head_dim % 2 != 0) return root.Error("head_dim", "must be even for RoPE");
  STAMEN_RETURN_IF_ERROR(root.Optional("max_position_embeddings", &config->max_position_embeddings));
  if (!IsDecoder(config->family)) STAMEN_RETURN_IF_ERROR(positive("max_position_embeddings", config->max_position_embeddings));
  return Status();
}

Status ReadFamilySettings(const JsonObject& root, ModelConfig* config) {
  std::string activation = IsDecoder(config->family) ? "silu" : "gelu";
  STAMEN_RETURN_IF_ERROR(root.Optional("hidden_act", &activation));
  const auto parsed = ops::ActivationFromName(activation);
  if (!parsed.has_value()) return root.Error("hidden_act", "names unsupported activation '" + activation + "'");
  config->hidden_act = *parsed;
  if (root.Has("pad_token_id")) {
    int64_t pad = 0;
    STAMEN_RETURN_IF_ERROR(root.Optional("pad_token_id", &pad));
    config->pad_token_id = pad;
  }
  if (IsDecoder(config->family)) {
    if (config->hidden_act != ops::Activation::kSilu) return root.Error("hidden_act", "must be silu for Qwen");
    config->norm_eps = 1e-6;
    STAMEN_RETURN_IF_ERROR(root.Optional("rms_norm_eps", &config->norm_eps));
    STAMEN_RETURN_IF_ERROR(root.Optional("rope_theta", &config->rope_theta));
    // transformers ≥ 5 writes {"rope_parameters": {"rope_theta": …, "rope_type": "default"}}.
    JsonObject rope = root;
    bool has_rope_parameters = false;
    STAMEN_RETURN_IF_ERROR(root.OptionalObject("rope_parameters", &rope, &has_rope_parameters));
    if (has_rope_parameters) {
      STAMEN_RETURN_IF_ERROR(rope.Optional("rope_theta", &config->rope_theta));
      std::string rope_type = "default";
      STAMEN_RETURN_IF_ERROR(rope.Optional("rope_type", &rope_type));
      if (rope_type != "default") return rope.Error("rope_type", "'" + rope_type + "' is not supported (only plain RoPE)");
    }
    if (!(config->rope_theta > 0)) return root.Error("rope_theta", "must be positive");
    if (root.Has("rope_scaling")) return root.Error("rope_scaling", "is not supported (only plain RoPE)");
    config->causal = true;
    STAMEN_RETURN_IF_ERROR(root.Optional("is_causal", &config->causal));
    return Status();
  }
  config->norm_eps = 1e-12;
  STAMEN_RETURN_IF_ERROR(root.Optional("layer_norm_eps", &config->norm_eps));
  config->type_vocab_size = 2;
  STAMEN_RETURN_IF_ERROR(root.Optional("type_vocab_size", &config->type_vocab_size));
  if (config->type_vocab_size < 1) return root.Error("type_vocab_size", "must be positive");
  std::string position_type = "absolute";
  STAMEN_RETURN_IF_ERROR(root.Optional("position_embedding_type", &position_type));
  if (position_type != "absolute") {
    return root.Error("position_embedding_type", "is '" + position_type + "'; only 'absolute' is supported");
  }
  if (config->family == ModelFamily::kRoberta) {
    config->pad_token_id = config->pad_token_id.value_or(1);
    // Positions run from pad_token_id + 1, so the table must hold that offset as well.
    if (*config->pad_token_id < 0 || *config->pad_token_id + 2 > config->max_position_embeddings) {
      return root.Error("pad_token_id", "leaves no room for positions in max_position_embeddings");
    }
  }
  return Status();
}

}  // namespace

const std::vector<std::string>& SupportedArchitectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const ArchitectureInfo& info : kArchitectures) list.emplace_back(info.name);
    return list;
  }();
  return names;
}

StatusOr<ModelConfig> ReadModelConfig(const std::string& path) {
  auto document = JsonDocument::Load(path);
  if (!document.ok()) return document.status();
  const JsonObject root = document.value()->root();
  ModelConfig config;
  STAMEN_RETURN_IF_ERROR(ReadArchitecture(root, &config));
  STAMEN_RETURN_IF_ERROR(ReadShapes(root, &config));
  STAMEN_RETURN_IF_ERROR(ReadFamilySettings(root, &config));
  if (config.head == ModelHead::kSequenceClassification) STAMEN_RETURN_IF_ERROR(ReadLabels(root, &config));
  return config;
}

}  // namespace stamen::engine
