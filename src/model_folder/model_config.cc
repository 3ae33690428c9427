// Reads config.json into ModelConfig: the architecture through the family registry, the
// common shapes, then the family's own settings, with defaults as transformers applies them,
// and checks that the shapes are consistent before any weight is touched.
#include "model_folder/model_config.h"

#include <string_view>

#include "model_folder/json_document.h"
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// The auto_map entries that decide what a folder runs under transformers' trust_remote_code:
// its config class, and the model class it is loaded through for the head stamen runs.
std::string_view AutoModelKey(ModelHead head) {
  switch (head) {
    case ModelHead::kSequenceClassification:
      return "AutoModelForSequenceClassification";
    case ModelHead::kMaskedLm:
      return "AutoModelForMaskedLM";
    case ModelHead::kNone:
      break;
  }
  return "AutoModel";
}

// Refuses a folder whose auto_map names remote code the family does not implement (by class
// name: "repo--module.Class" and "module.Class" both name Class): such a folder computes what
// that code says (jina-embeddings-v2's JinaBERT says model_type "bert"), not what its
// model_type's base family would.
Status CheckRemoteCode(const JsonObject& root, const FamilyConfig& family, ModelHead head) {
  JsonObject auto_map = root;
  bool has_auto_map = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("auto_map", &auto_map, &has_auto_map));
  if (!has_auto_map) return Status();
  for (const std::string_view key : {std::string_view("AutoConfig"), AutoModelKey(head)}) {
    std::string target;
    STAMEN_RETURN_IF_ERROR(auto_map.Optional(key, &target));
    if (target.empty()) continue;
    const size_t dot = target.rfind('.');
    const std::string_view name = dot == std::string::npos ? std::string_view(target) : std::string_view(target).substr(dot + 1);
    bool implemented = false;
    for (const std::string_view known : family.remote_code_classes) implemented = implemented || known == name;
    if (!implemented) {
      return auto_map.Error(key, "names remote code class '" + std::string(name) + "' ('" + target +
                                     "'), which stamen does not implement; the folder is not run as its model_type "
                                     "or architecture would be without it");
    }
  }
  return Status();
}

// The class name of auto_map[key] ("repo--module.Class" or "module.Class"), "" when absent.
StatusOr<std::string> AutoMapClass(const JsonObject& root, std::string_view key) {
  JsonObject auto_map = root;
  bool has_auto_map = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("auto_map", &auto_map, &has_auto_map));
  std::string target;
  if (has_auto_map) STAMEN_RETURN_IF_ERROR(auto_map.Optional(key, &target));
  const size_t dot = target.rfind('.');
  return dot == std::string::npos ? target : target.substr(dot + 1);
}

// A folder whose "architectures" names a base class (jina-embeddings-v3: XLMRobertaModel) while
// its auto_map loads a remote-code class that a family implements as an architecture
// (XLMRobertaLoRA) runs as that class, which is what transformers with trust_remote_code
// instantiates, when that family lists the named base class (remote_code_named_architectures;
// voyage-4-nano's Qwen3BidirectionalModel is of the family of the Qwen3 classes it may name). A
// Stanford ColBERT checkpoint runs as the ColBERT class of the family whose remote config its
// auto_map names (stanford_colbert_architecture), or as HF_ColBERT over BERT.
Status TakeRemoteCodeArchitecture(const JsonObject& root, ModelConfig* config) {
  if (config->architecture == kStanfordColbertArchitecture) {
    // An HF_ColBERT over a remote-code backbone runs as that backbone's family's ColBERT class.
    auto remote_config = AutoMapClass(root, "AutoConfig");
    if (!remote_config.ok()) return remote_config.status();
    for (const FamilyConfig* family : FamilyConfigs()) {
      if (family->stanford_colbert_architecture.empty()) continue;
      for (const std::string_view known : family->remote_code_classes) {
        if (known == *remote_config) config->architecture = std::string(family->stanford_colbert_architecture);
      }
    }
    return Status();
  }
  const ArchitectureDefinition* named = nullptr;
  const FamilyConfig* named_family = FindArchitecture(config->architecture, &named);
  auto loaded = AutoMapClass(root, AutoModelKey(named_family != nullptr ? named->head : ModelHead::kNone));
  if (!loaded.ok()) return loaded.status();
  const ArchitectureDefinition* remote = nullptr;
  const FamilyConfig* remote_family = FindArchitecture(*loaded, &remote);
  if (loaded->empty() || remote_family == nullptr || *loaded == config->architecture) return Status();
  for (const std::string_view base : remote_family->remote_code_named_architectures) {
    if (base == config->architecture) {
      config->architecture = *loaded;
      return Status();
    }
  }
  return Status();
}

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
    for (const FamilyConfig* family : FamilyConfigs()) {
      for (const ArchitectureDefinition& architecture : family->architectures) {
        if (!config->model_type.empty() && architecture.default_for_model_type == config->model_type) {
          config->architecture = std::string(architecture.name);
        }
      }
    }
    if (config->architecture.empty()) {
      return root.Error("architectures", "is missing and model_type '" + config->model_type + "' is not supported");
    }
  }
  STAMEN_RETURN_IF_ERROR(TakeRemoteCodeArchitecture(root, config));
  const ArchitectureDefinition* architecture = nullptr;
  const FamilyConfig* family = FindArchitecture(config->architecture, &architecture);
  if (family == nullptr) {
    std::string supported;
    for (const std::string& name : SupportedArchitectures()) supported += (supported.empty() ? "" : ", ") + name;
    return Status::Error(root.file() + ": architecture '" + config->architecture + "' is not supported (supported: " +
                         supported + ")");
  }
  config->family = ModelFamilyOf(*family);
  config->head = architecture->head;
  config->decoder = family->decoder;
  return CheckRemoteCode(root, *family, config->head);
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

Status ReadShapes(const JsonObject& root, const ShapeKeys& keys, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(root.Required(keys.hidden_size, &config->hidden_size));
  STAMEN_RETURN_IF_ERROR(root.Required(keys.num_hidden_layers, &config->num_hidden_layers));
  STAMEN_RETURN_IF_ERROR(root.Required(keys.num_attention_heads, &config->num_attention_heads));
  STAMEN_RETURN_IF_ERROR(root.Required(keys.intermediate_size, &config->intermediate_size));
  STAMEN_RETURN_IF_ERROR(root.Required("vocab_size", &config->vocab_size));
  auto positive = [&](std::string_view key, int64_t value) {
    return value > 0 ? Status() : root.Error(key, "must be positive, not " + std::to_string(value));
  };
  STAMEN_RETURN_IF_ERROR(positive(keys.hidden_size, config->hidden_size));
  STAMEN_RETURN_IF_ERROR(positive(keys.num_hidden_layers, config->num_hidden_layers));
  // Some families list each layer's attention kind here, before the weights are opened (where
  // the count is checked against the layers present): a count past any real model's must not
  // make that list first.
  constexpr int64_t kMostLayers = 100'000;
  if (config->num_hidden_layers > kMostLayers) {
    return root.Error(keys.num_hidden_layers, "is " + std::to_string(config->num_hidden_layers) + ", more than " +
                                                  std::to_string(kMostLayers) + " layers");
  }
  STAMEN_RETURN_IF_ERROR(positive(keys.num_attention_heads, config->num_attention_heads));
  STAMEN_RETURN_IF_ERROR(positive(keys.intermediate_size, config->intermediate_size));
  STAMEN_RETURN_IF_ERROR(positive("vocab_size", config->vocab_size));
  config->num_key_value_heads = config->num_attention_heads;
  STAMEN_RETURN_IF_ERROR(root.Optional("num_key_value_heads", &config->num_key_value_heads));
  if (config->num_key_value_heads <= 0 || config->num_attention_heads % config->num_key_value_heads != 0) {
    return root.Error("num_key_value_heads", "must divide " + std::string(keys.num_attention_heads));
  }
  if (root.Has("head_dim")) {
    STAMEN_RETURN_IF_ERROR(root.Optional("head_dim", &config->head_dim));
  } else if (config->hidden_size % config->num_attention_heads != 0) {
    return root.Error(keys.hidden_size, "is not a multiple of " + std::string(keys.num_attention_heads));
  } else {
    config->head_dim = config->hidden_size / config->num_attention_heads;
  }
  STAMEN_RETURN_IF_ERROR(positive("head_dim", config->head_dim));
  STAMEN_RETURN_IF_ERROR(root.Optional(keys.max_position_embeddings, &config->max_position_embeddings));
  if (!config->decoder) STAMEN_RETURN_IF_ERROR(positive(keys.max_position_embeddings, config->max_position_embeddings));
  return Status();
}

}  // namespace

int AdapterIndex(const ModelConfig& config, std::string_view task) {
  for (size_t i = 0; i < config.adapter_tasks.size(); ++i) {
    if (config.adapter_tasks[i] == task) return static_cast<int>(i);
  }
  return -1;
}

std::string AdapterTaskList(const ModelConfig& config) {
  std::string list;
  for (const std::string& task : config.adapter_tasks) list += (list.empty() ? "'" : ", '") + task + "'";
  return list.empty() ? "none" : list;
}

const std::vector<std::string>& SupportedArchitectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const FamilyConfig* family : FamilyConfigs()) {
      for (const ArchitectureDefinition& architecture : family->architectures) list.emplace_back(architecture.name);
    }
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
  const FamilyConfig& family = FamilyConfigOf(config.family);
  // Static embedding folders have no transformer shapes: their row says how they are read.
  if (config.family == ModelFamily::kStaticEmbedding) return family.read_settings(root, &config);
  const bool remote_code_keys = family.remote_code_shape_keys != nullptr && !root.Has(family.shape_keys.hidden_size) &&
                                root.Has(family.remote_code_shape_keys->hidden_size);
  STAMEN_RETURN_IF_ERROR(
      ReadShapes(root, remote_code_keys ? *family.remote_code_shape_keys : family.shape_keys, &config));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadPadToken(root, &config));
  STAMEN_RETURN_IF_ERROR(family.read_settings(root, &config));
  // num_labels is a classifier's label count, and the width of Qwen3BidirectionalModel's projection.
  if (config.head == ModelHead::kSequenceClassification || config.architecture == kQwen3BidirectionalArchitecture) {
    STAMEN_RETURN_IF_ERROR(ReadLabels(root, &config));
  }
  return config;
}

}  // namespace stamen::engine
