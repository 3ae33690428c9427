// Reads the sentence-transformers files of a model folder: which modules run after the
// transformer (Pooling, Dense, Normalize), the pooling mode in its old (booleans) and new
// ("pooling_mode") spelling, prompts, and the maximum sequence length.
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <string_view>

#include "common/files.h"
#include "model_folder/json_document.h"
#include "model_folder/model_config.h"
#include "model_folder/model_profile.h"

namespace stamen::engine {
namespace {

namespace fs = std::filesystem;

// The last component of a dotted Python class path: "sentence_transformers.models.Pooling" → "Pooling".
std::string_view ClassName(std::string_view type) {
  const size_t dot = type.rfind('.');
  return dot == std::string_view::npos ? type : type.substr(dot + 1);
}

Status ReadPooling(const std::string& path, SentenceTransformersConfig* config) {
  auto document = JsonDocument::Load(path);
  if (!document.ok()) return document.status();
  const JsonObject root = document.value()->root();
  STAMEN_RETURN_IF_ERROR(root.Optional("include_prompt", &config->include_prompt));
  if (root.Has("pooling_mode")) {
    std::string mode;
    STAMEN_RETURN_IF_ERROR(root.Optional("pooling_mode", &mode));
    config->pooling = ops::PoolingModeFromName(mode);
    // A Pooling module's modes are those with a flag; splade is a SpladePooling module's.
    const bool pooling_module_mode =
        std::any_of(std::begin(ops::kPoolingModeNames), std::end(ops::kPoolingModeNames), [&](const auto& names) {
          return names.mode == config->pooling && !names.sentence_transformers_flag.empty();
        });
    if (!pooling_module_mode) return root.Error("pooling_mode", "names unsupported mode '" + mode + "'");
    return Status();
  }
  for (const ops::PoolingModeNames& names : ops::kPoolingModeNames) {
    if (names.sentence_transformers_flag.empty()) continue;
    bool enabled = false;
    STAMEN_RETURN_IF_ERROR(root.Optional(names.sentence_transformers_flag, &enabled));
    if (!enabled) continue;
    if (config->pooling.has_value()) {
      return root.Error(names.sentence_transformers_flag,
                        "combines several pooling modes (concatenated vectors are not supported)");
    }
    config->pooling = names.mode;
  }
  if (!config->pooling.has_value()) return Status::Error(path + ": no pooling mode is enabled");
  return Status();
}

// A sparse_encoder SpladePooling module: SPLADE as the engine computes it is max pooling of
// relu activations (then log1p); other strategies would give other vectors, so they are refused.
Status ReadSpladePooling(const std::string& path, SentenceTransformersConfig* config) {
  auto document = JsonDocument::Load(path);
  if (!document.ok()) return document.status();
  const JsonObject root = document.value()->root();
  std::string strategy = "max", activation = "relu";
  STAMEN_RETURN_IF_ERROR(root.Optional("pooling_strategy", &strategy));
  STAMEN_RETURN_IF_ERROR(root.Optional("activation_function", &activation));
  if (strategy != "max") return root.Error("pooling_strategy", "is '" + strategy + "'; only 'max' is supported");
  if (activation != "relu") return root.Error("activation_function", "is '" + activation + "'; only 'relu' is supported");
  config->pooling = ops::PoolingMode::kSplade;
  return Status();
}

// The activation a Dense module's config names by its torch class ("torch.nn.modules.linear.Identity").
std::optional<ops::Activation> DenseActivation(std::string_view type) {
  const std::string_view name = ClassName(type);
  if (name == "Identity") return ops::Activation::kIdentity;
  if (name == "Tanh") return ops::Activation::kTanh;
  if (name == "ReLU") return ops::Activation::kRelu;
  if (name == "GELU") return ops::Activation::kGeluErf;  // torch.nn.GELU's default, approximate='none'
  if (name == "SiLU") return ops::Activation::kSilu;
  return std::nullopt;
}

Status ReadDense(const fs::path& module_folder, SentenceTransformersConfig* config) {
  const std::string path = (module_folder / "config.json").string();
  auto document = JsonDocument::Load(path);
  if (!document.ok()) return document.status();
  const JsonObject root = document.value()->root();
  DenseModuleConfig dense;
  dense.folder = module_folder.string();
  STAMEN_RETURN_IF_ERROR(root.Required("in_features", &dense.in_features));
  STAMEN_RETURN_IF_ERROR(root.Required("out_features", &dense.out_features));
  if (dense.in_features <= 0) return root.Error("in_features", "must be positive");
  if (dense.out_features <= 0) return root.Error("out_features", "must be positive");
  STAMEN_RETURN_IF_ERROR(root.Optional("bias", &dense.bias));
  std::string activation = "torch.nn.modules.activation.Tanh";
  STAMEN_RETURN_IF_ERROR(root.Optional("activation_function", &activation));
  const auto parsed = DenseActivation(activation);
  if (!parsed.has_value()) return root.Error("activation_function", "names unsupported activation '" + activation + "'");
  dense.activation = *parsed;
  // PyLate's Dense may add its input back (use_residual), which the engine does not compute.
  bool residual = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("use_residual", &residual));
  if (residual) return root.Error("use_residual", "is true; a Dense module with a residual is not supported");
  if (!config->dense.empty() && config->dense.back().out_features != dense.in_features) {
    return root.Error("in_features", "is " + std::to_string(dense.in_features) + " but the Dense module before gives " +
                                         std::to_string(config->dense.back().out_features));
  }
  config->dense.push_back(std::move(dense));
  return Status();
}

Status ReadModules(const fs::path& folder, SentenceTransformersConfig* config) {
  const std::string path = (folder / "modules.json").string();
  simdjson::dom::parser parser;
  simdjson::padded_string json;
  if (simdjson::padded_string::load(path).get(json) != simdjson::SUCCESS) return Status::Error("cannot read " + path);
  simdjson::dom::array modules;
  if (parser.parse(json).get(modules) != simdjson::SUCCESS) return Status::Error(path + ": not a JSON list");
  config->has_modules = true;
  for (simdjson::dom::element module : modules) {
    std::string_view type;
    std::string_view module_path;
    if (module["type"].get(type) != simdjson::SUCCESS) return Status::Error(path + ": a module has no \"type\"");
    if (module["path"].get(module_path) != simdjson::SUCCESS) module_path = "";
    const std::string_view name = ClassName(type);
    // MLMTransformer (sentence-transformers' sparse encoders) is the transformer with its
    // masked-LM head: the architecture in config.json says which head the engine loads.
    if (name == "Transformer" || name == "MLMTransformer") continue;
    if ((name == "Pooling" || name == "Dense" || name == "SpladePooling" || name == "StaticEmbedding") &&
        module_path.find("..") != std::string_view::npos) {
      return Status::Error(path + ": module path '" + std::string(module_path) + "' leaves the model folder");
    }
    if (name == "StaticEmbedding") {
      // An embedding bag: the mean of the text's token rows is its pooled vector (Dense and
      // Normalize may follow). It must come first: it takes text, not token vectors.
      if (config->pooling.has_value() || !config->dense.empty() || config->normalize) {
        return Status::Error(path + ": a StaticEmbedding module must be the first module");
      }
      config->static_embedding_folder =
          module_path.empty() || module_path == "." ? folder.string() : (folder / module_path).string();
      config->pooling = ops::PoolingMode::kMean;
    } else if (name == "Normalize") {
      config->normalize = true;
    } else if (name == "Pooling") {
      if (config->multi_vector.enabled) {
        return Status::Error(path + ": a Dense module before Pooling (on token vectors) is not supported");
      }
      STAMEN_RETURN_IF_ERROR(ReadPooling((folder / module_path / "config.json").string(), config));
    } else if (name == "SpladePooling") {
      STAMEN_RETURN_IF_ERROR(ReadSpladePooling((folder / module_path / "config.json").string(), config));
    } else if (name == "Dense") {
      // The engine runs Dense on pooled vectors and normalises last; another order would
      // compute something else, so it is refused. Dense modules with no Pooling at all project
      // every token: a multi-vector model (PyLate's ColBERT folders; checked below).
      if (!config->pooling.has_value()) {
        if (config->static_embedding_folder.empty()) config->multi_vector.enabled = true;
      }
      if (config->normalize) return Status::Error(path + ": a Dense module after Normalize is not supported");
      STAMEN_RETURN_IF_ERROR(ReadDense(folder / module_path, config));
    } else {
      return Status::Error(path + ": module type '" + std::string(type) +
                           "' is not supported (supported: Transformer, MLMTransformer, StaticEmbedding, "
                           "Pooling, SpladePooling, Dense, Normalize)");
    }
  }
  return Status();
}

// PyLate's ColBERT settings (MultiVectorConfig), its defaults where a key is absent.
Status ReadMultiVector(const JsonObject& root, MultiVectorConfig* config) {
  STAMEN_RETURN_IF_ERROR(root.Optional("query_prefix", &config->query_prefix));
  STAMEN_RETURN_IF_ERROR(root.Optional("document_prefix", &config->document_prefix));
  STAMEN_RETURN_IF_ERROR(root.Optional("query_length", &config->query_length));
  STAMEN_RETURN_IF_ERROR(root.Optional("document_length", &config->document_length));
  STAMEN_RETURN_IF_ERROR(root.Optional("do_query_expansion", &config->do_query_expansion));
  STAMEN_RETURN_IF_ERROR(root.Optional("attend_to_expansion_tokens", &config->attend_to_expansion_tokens));
  // PyLate: no expansion, nothing to attend to.
  if (!config->do_query_expansion) config->attend_to_expansion_tokens = false;
  if (config->query_length < 2) return root.Error("query_length", "must be at least 2");
  if (config->document_length < 2) return root.Error("document_length", "must be at least 2");
  simdjson::dom::element words;
  if (root.raw()["skiplist_words"].get(words) == simdjson::SUCCESS && !words.is_null()) {
    simdjson::dom::array list;
    if (words.get(list) != simdjson::SUCCESS) return root.Error("skiplist_words", "must be a list of strings");
    for (simdjson::dom::element word : list) {
      std::string_view text;
      if (word.get(text) != simdjson::SUCCESS) return root.Error("skiplist_words", "must be a list of strings");
      config->skiplist_words.emplace_back(text);
    }
  } else {
    for (const char c : std::string_view("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")) config->skiplist_words.emplace_back(1, c);
  }
  return Status();
}

Status ReadPrompts(const std::string& path, SentenceTransformersConfig* config) {
  auto document = JsonDocument::Load(path);
  if (!document.ok()) return document.status();
  const JsonObject root = document.value()->root();
  JsonObject prompts = root;
  bool has_prompts = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("prompts", &prompts, &has_prompts));
  if (has_prompts) {
    for (auto [name, value] : prompts.raw()) {
      std::string_view text;
      if (value.get(text) != simdjson::SUCCESS) return prompts.Error(name, "in \"prompts\" must be a string");
      config->prompts[std::string(name)] = std::string(text);
    }
  }
  STAMEN_RETURN_IF_ERROR(root.Optional("default_prompt_name", &config->default_prompt_name));
  if (config->multi_vector.enabled) STAMEN_RETURN_IF_ERROR(ReadMultiVector(root, &config->multi_vector));
  if (!config->default_prompt_name.empty() && config->prompts.count(config->default_prompt_name) == 0) {
    return root.Error("default_prompt_name", "names prompt '" + config->default_prompt_name + "', which is not in prompts");
  }
  return Status();
}

}  // namespace

StatusOr<SentenceTransformersConfig> ReadSentenceTransformersConfig(const std::string& model_dir) {
  const fs::path folder(model_dir);
  SentenceTransformersConfig config;
  std::error_code error;
  if (IsFile(folder / "modules.json")) STAMEN_RETURN_IF_ERROR(ReadModules(folder, &config));
  if (IsFile(folder / "config_sentence_transformers.json")) {
    STAMEN_RETURN_IF_ERROR(ReadPrompts((folder / "config_sentence_transformers.json").string(), &config));
  } else if (config.multi_vector.enabled) {
    return Status::Error(model_dir + ": Dense modules on token vectors without a Pooling module make a multi-vector "
                         "(PyLate ColBERT) model, which needs config_sentence_transformers.json");
  }
  // sentence_bert_config.json, or sentence_<model type>_config.json in older exports.
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("sentence_", 0) != 0 || name.size() < 21 || name.substr(name.size() - 12) != "_config.json") continue;
    auto document = JsonDocument::Load(entry.path().string());
    if (!document.ok()) return document.status();
    STAMEN_RETURN_IF_ERROR(document.value()->root().Optional("max_seq_length", &config.max_seq_length));
  }
  return config;
}

std::optional<ops::PoolingMode> DefaultPooling(const ModelConfig& config, const SentenceTransformersConfig& st) {
  if (st.pooling.has_value()) return st.pooling;
  if (config.decoder) return config.causal ? ops::PoolingMode::kLastToken : ops::PoolingMode::kMean;
  // A masked-LM head is loaded for SPLADE, so that is what such a folder gives by default.
  if (config.head == ModelHead::kMaskedLm) return ops::PoolingMode::kSplade;
  return std::nullopt;
}

int64_t DefaultEmbeddingWidth(const ModelConfig& config, const SentenceTransformersConfig& st) {
  return ProfileOf(config, st).embedding_width;
}

}  // namespace stamen::engine
