#include "hub/file_selection.h"

#include <algorithm>
#include <cctype>
#include <span>
#include <string>

namespace stamen::hub {
namespace {

constexpr std::string_view kTokenizerFiles[] = {
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.txt",
    "vocab.json",     "merges.txt",            "sentencepiece.bpe.model", "spiece.model",      "tokenizer.model",
    "spm.model"};  // DeBERTa-v2/v3 repositories without tokenizer.json (microsoft/deberta-v3-base)
constexpr std::string_view kSentenceTransformersFiles[] = {"modules.json", "config_sentence_transformers.json"};
// bge-m3's ColBERT and sparse heads (torch.save state dicts beside config.json): small, and what
// makes the folder a bge-m3 one for the gateway too, so they are chosen with or without weights.
constexpr std::string_view kBgeM3Heads[] = {"colbert_linear.pt", "sparse_linear.pt"};

bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// model-00001-of-00002.safetensors
bool IsWeightShard(std::string_view path) {
  if (!path.starts_with("model-") || !path.ends_with(".safetensors")) return false;
  const std::string_view middle = path.substr(6, path.size() - 6 - 12);
  const size_t of = middle.find("-of-");
  return of != std::string_view::npos && AllDigits(middle.substr(0, of)) && AllDigits(middle.substr(of + 4));
}

// sentence_bert_config.json, sentence_xlm-roberta_config.json, …
bool IsSentenceConfig(std::string_view path) {
  return path.starts_with("sentence_") && path.ends_with("_config.json") && path.find('/') == std::string_view::npos;
}

// A file directly inside a sentence-transformers module folder ("1_Pooling/config.json").
bool IsModuleFile(std::string_view path) {
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos || path.find('/', slash + 1) != std::string_view::npos) return false;
  const std::string_view folder = path.substr(0, slash);
  const size_t underscore = folder.find('_');
  if (underscore == std::string_view::npos || !AllDigits(folder.substr(0, underscore)) ||
      underscore + 1 == folder.size()) {
    return false;
  }
  const std::string_view name = path.substr(slash + 1);
  return name.ends_with(".json") || name.ends_with(".safetensors");
}

// A file of a sentence-transformers StaticEmbedding module's folder ("0_StaticEmbedding/model.safetensors").
bool IsStaticEmbeddingFile(std::string_view path) {
  return IsModuleFile(path) && path.substr(0, path.find('/')).ends_with("_StaticEmbedding");
}

bool OneOf(std::string_view path, std::span<const std::string_view> names) {
  return std::find(names.begin(), names.end(), path) != names.end();
}

}  // namespace

Status ValidateRepoFilePath(std::string_view path) {
  const auto bad = [&] { return Status::Error("the hub listed an unsafe file name '" + std::string(path) + "'"); };
  if (path.empty() || path.front() == '/' || path.size() > 1024) return bad();
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t slash = std::min(path.find('/', begin), path.size());
    const std::string_view part = path.substr(begin, slash - begin);
    if (part.empty() || part == "." || part == "..") return bad();
    begin = slash + 1;
  }
  for (char c : path) {
    if (static_cast<unsigned char>(c) < ' ' || c == '\\' || c == 0x7f) return bad();
  }
  return Status();
}

StatusOr<std::vector<RepoFile>> SelectModelFiles(const std::vector<RepoFile>& files, const std::string& repo_id,
                                                 bool weights) {
  bool has_config = false, has_single = false, has_index = false, has_shard = false, has_modules = false;
  bool has_static_module = false;
  for (const RepoFile& file : files) {
    has_config |= file.path == "config.json";
    has_single |= file.path == "model.safetensors";
    has_index |= file.path == "model.safetensors.index.json";
    has_shard |= IsWeightShard(file.path);
    has_modules |= file.path == "modules.json";
    has_static_module |= IsStaticEmbeddingFile(file.path) && file.path.ends_with("/model.safetensors");
  }
  // A sentence-transformers static model (StaticEmbedding) has no config.json: its table, at
  // the root or in its module's folder, is the model, and its header describes it, so a gateway
  // takes it too.
  const bool static_repository = !has_config && has_modules && (has_single || has_static_module);
  if (!has_config && !static_repository) {
    return Status::Error(repo_id + " has no config.json: not a transformers model repository");
  }
  if (!has_single && !(has_index && has_shard) && !has_static_module) {
    std::string others;
    for (const RepoFile& file : files) {
      if (file.path.find('/') == std::string::npos &&
          (file.path.ends_with(".bin") || file.path.ends_with(".pt") || file.path.ends_with(".h5") ||
           file.path.ends_with(".safetensors") || file.path.ends_with(".onnx") || file.path.ends_with(".msgpack"))) {
        others += (others.empty() ? "" : ", ") + file.path;
      }
    }
    return Status::Error(repo_id + " has no model.safetensors (nor a sharded model.safetensors.index.json); stamen "
                         "loads safetensors weights only" + (others.empty() ? std::string() : " (found: " + others + ")"));
  }

  std::vector<RepoFile> chosen;
  for (const RepoFile& file : files) {
    const std::string_view path = file.path;
    const bool model_weights = has_single ? path == "model.safetensors"
                                          : path == "model.safetensors.index.json" || IsWeightShard(path);
    const bool static_table = static_repository && (path == "model.safetensors" || IsStaticEmbeddingFile(path));
    if (!weights && path.ends_with(".safetensors") && !static_table) continue;
    if (path == "config.json" || model_weights || OneOf(path, kTokenizerFiles) ||
        OneOf(path, kSentenceTransformersFiles) || IsSentenceConfig(path) || IsModuleFile(path) ||
        OneOf(path, kBgeM3Heads)) {
      STAMEN_RETURN_IF_ERROR(ValidateRepoFilePath(path));
      chosen.push_back(file);
    }
  }
  return chosen;
}

}  // namespace stamen::hub
