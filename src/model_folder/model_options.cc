// The names of a model folder's options (see model_options.h).
#include "model_folder/model_options.h"

#include <algorithm>
#include <filesystem>

namespace stamen::engine {

std::string ModelIdOf(const std::string& model_dir, const std::string& model_id) {
  if (!model_id.empty()) return model_id;
  const std::filesystem::path folder = std::filesystem::path(model_dir).lexically_normal();
  // "models/e5/" normalises to a path whose last part is empty: the folder is the parent.
  const std::string name = folder.filename().string();
  return !name.empty() ? name : folder.parent_path().filename().string();
}

std::string PoolingOptionName(ops::PoolingMode mode) {
  std::string name(ops::PoolingModeName(mode));
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::optional<ops::PoolingMode> ParsePoolingOption(std::string_view name) {
  for (const ops::PoolingMode mode : ops::kPoolingModes) {
    if (name == PoolingOptionName(mode)) return mode;
  }
  return ops::PoolingModeFromName(name);
}

std::string PoolingOptionNames() {
  std::string names;
  for (const ops::PoolingMode mode : ops::kPoolingModes) names += (names.empty() ? "" : ", ") + PoolingOptionName(mode);
  return names;
}

Status CheckPoolingFitsModel(const ModelConfig& config, ops::PoolingMode pooling) {
  if (pooling == ops::PoolingMode::kSplade && config.head != ModelHead::kMaskedLm) {
    return Status::Error(config.architecture + " has no masked-LM head: splade pooling needs a …ForMaskedLM model");
  }
  return Status();
}

const std::string* FindPrompt(const SentenceTransformersConfig& config, const std::string& name) {
  const auto found = config.prompts.find(name);
  return found != config.prompts.end() ? &found->second : nullptr;
}

std::string PromptNames(const SentenceTransformersConfig& config) {
  std::string names;
  for (const auto& [name, text] : config.prompts) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

}  // namespace stamen::engine
