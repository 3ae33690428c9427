// ReadModelFolder: a transformer folder through config.json and the sentence-transformers
// files, or a static embedding folder (model2vec, StaticEmbedding module) through its
// embedding table's shape, read from the safetensors header without loading the table, so
// the gateway describes such a model without the engine.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>

#include "common/files.h"
#include "model_folder/bge_m3.h"
#include "model_folder/json_document.h"
#include "model_folder/model_config.h"
#include "model_folder/tensor_shapes.h"

namespace stamen::engine {
namespace {

namespace fs = std::filesystem;

// The table's width and the number of token ids it serves, from the tensors a static folder
// holds: sentence-transformers' "embedding.weight" [ids, dim], or model2vec's "embeddings"
// [rows, dim] with an optional "mapping" [ids] (token id → row, vocabulary quantisation) and
// optional "weights" [ids] (per-token factors), which sentence-transformers folds the same way.
Status ReadTableShape(const std::string& weights_path, bool model2vec, StaticEmbeddingConfig* table,
                      int64_t* dimensions) {
  auto shapes = ReadTensorShapes(weights_path);
  if (!shapes.ok()) return shapes.status();
  const auto find = [&](std::string_view name) -> const std::vector<int64_t>* {
    const auto found = shapes->find(std::string(name));
    return found == shapes->end() ? nullptr : &found->second;
  };
  const std::vector<int64_t>* embeddings = find(model2vec ? "embeddings" : "embedding.weight");
  if (embeddings == nullptr && !model2vec) embeddings = find("embeddings");  // a model2vec table in a module
  if (embeddings == nullptr) {
    return Status::Error(weights_path + ": no tensor '" + std::string(model2vec ? "embeddings" : "embedding.weight") +
                         "' (the static embedding table)");
  }
  if (embeddings->size() != 2 || (*embeddings)[0] < 1 || (*embeddings)[1] < 1) {
    return Status::Error(weights_path + ": the static embedding table must be 2-D and not empty");
  }
  int64_t ids = (*embeddings)[0];
  if (const std::vector<int64_t>* mapping = find("mapping")) {
    if (mapping->size() != 1 || (*mapping)[0] < 1) return Status::Error(weights_path + ": 'mapping' must be 1-D");
    ids = (*mapping)[0];
  }
  if (const std::vector<int64_t>* weights = find("weights")) {
    if (weights->size() != 1 || (*weights)[0] != ids) {
      return Status::Error(weights_path + ": 'weights' must hold one factor for each of the " + std::to_string(ids) +
                           " token ids");
    }
  }
  // The int32 ids a step carries, the empty bag's row included.
  if (ids >= INT32_MAX) return Status::Error(weights_path + ": the static embedding table has too many rows");
  table->vocabulary_rows = ids;
  *dimensions = (*embeddings)[1];
  return Status();
}

// model2vec's config.json: "normalize" (default false) and "max_length" (default 512; null: no
// limit), as StaticModel.from_pretrained resolves them.
Status ReadModel2VecSettings(const JsonObject& root, int64_t* max_length, bool* normalize) {
  *normalize = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("normalize", normalize));
  *max_length = 512;
  if (root.Has("max_length") && root.raw()["max_length"].is_null()) {
    *max_length = 0;
  } else {
    STAMEN_RETURN_IF_ERROR(root.Optional("max_length", max_length));
    if (*max_length < 1) return root.Error("max_length", "must be positive or null");
  }
  return Status();
}

// The truncation a tokenizer.json carries ({"max_length", "direction", …} or null), which a
// StaticEmbedding module's tokenizer applies: model2vec saves its tokenizer with its max_length.
Status ReadTokenizerTruncation(const std::string& path, int64_t* max_length) {
  auto document = JsonDocument::Load(path);
  if (!document.ok()) return document.status();
  JsonObject truncation = document.value()->root();
  bool found = false;
  STAMEN_RETURN_IF_ERROR(document.value()->root().OptionalObject("truncation", &truncation, &found));
  if (!found) return Status();
  STAMEN_RETURN_IF_ERROR(truncation.Required("max_length", max_length));
  if (*max_length < 1) return truncation.Error("max_length", "must be positive");
  std::string direction = "Right";
  STAMEN_RETURN_IF_ERROR(truncation.Optional("direction", &direction));
  if (direction != "Right") return truncation.Error("direction", "is '" + direction + "'; only 'Right' is supported");
  return Status();
}

// A static folder's ModelConfig, once `folder` (tensors and tokenizer) is known.
Status DescribeStaticModel(const std::string& folder, bool model2vec, ModelConfig* config) {
  config->family = ModelFamily::kStaticEmbedding;
  config->head = ModelHead::kNone;
  config->architecture = model2vec ? "StaticModel" : "StaticEmbedding";
  config->static_embedding.folder = folder;
  config->static_embedding.model2vec_rules = model2vec;
  config->weights_folder = folder;
  const std::string tokenizer_path = (fs::path(folder) / "tokenizer.json").string();
  if (!IsFile(tokenizer_path)) return Status::Error(folder + ": a static embedding model needs its tokenizer.json here");
  // model2vec's encode sets its own truncation (max_length); sentence-transformers keeps the file's.
  if (!model2vec) STAMEN_RETURN_IF_ERROR(ReadTokenizerTruncation(tokenizer_path, &config->static_embedding.max_length));
  int64_t dimensions = 0;
  STAMEN_RETURN_IF_ERROR(
      ReadTableShape((fs::path(folder) / "model.safetensors").string(), model2vec, &config->static_embedding, &dimensions));
  config->hidden_size = dimensions;
  config->vocab_size = config->static_embedding.vocabulary_rows + 1;  // the empty bag's zero row last
  config->max_position_embeddings = config->static_embedding.max_length;
  return Status();
}

// Whether config.json says model2vec (its model_type, or the StaticModel architecture).
StatusOr<bool> IsModel2VecConfig(const std::string& path) {
  if (!IsFile(path)) return false;
  auto document = JsonDocument::Load(path);
  if (!document.ok()) return document.status();
  const JsonObject root = document.value()->root();
  std::string model_type;
  STAMEN_RETURN_IF_ERROR(root.Optional("model_type", &model_type));
  if (model_type == "model2vec") return true;
  simdjson::dom::array architectures;
  std::string_view first;
  return root.raw()["architectures"].get(architectures) == simdjson::SUCCESS && architectures.size() > 0 &&
         architectures.at(0).get(first) == simdjson::SUCCESS && first == "StaticModel";
}

}  // namespace

StatusOr<ModelFolder> ReadModelFolder(const std::string& model_dir) {
  ModelFolder folder;
  const std::string config_path = (fs::path(model_dir) / "config.json").string();
  auto model2vec = IsModel2VecConfig(config_path);
  if (!model2vec.ok()) return model2vec.status();
  if (*model2vec) {
    // model2vec's own encode reads config.json only (modules.json, which it writes for
    // sentence-transformers, changes nothing there), so the folder is served as it computes.
    auto document = JsonDocument::Load(config_path);
    if (!document.ok()) return document.status();
    folder.config.model_type = "model2vec";
    STAMEN_RETURN_IF_ERROR(ReadModel2VecSettings(document.value()->root(), &folder.config.static_embedding.max_length,
                                                 &folder.sentence_transformers.normalize));
    STAMEN_RETURN_IF_ERROR(DescribeStaticModel(model_dir, /*model2vec=*/true, &folder.config));
    folder.sentence_transformers.pooling = ops::PoolingMode::kMean;
    folder.sentence_transformers.static_embedding_folder = model_dir;
    return folder;
  }
  auto sentence_transformers = ReadSentenceTransformersConfig(model_dir);
  if (!sentence_transformers.ok()) return sentence_transformers.status();
  folder.sentence_transformers = std::move(sentence_transformers.value());
  if (!folder.sentence_transformers.static_embedding_folder.empty()) {
    STAMEN_RETURN_IF_ERROR(DescribeStaticModel(folder.sentence_transformers.static_embedding_folder,
                                               /*model2vec=*/false, &folder.config));
    // StaticEmbedding's max_seq_length is infinite: sentence_bert_config.json cannot cut it (its
    // tokenizer.json's truncation can, static_embedding.max_length).
    folder.sentence_transformers.max_seq_length = 0;
    return folder;
  }
  auto config = ReadModelConfig(config_path);
  if (!config.ok()) return config.status();
  folder.config = std::move(config.value());
  if (IsStanfordColbert(folder.config) && !folder.sentence_transformers.has_modules) {
    STAMEN_RETURN_IF_ERROR(ReadStanfordColbert(model_dir, folder.config, &folder.sentence_transformers));
  }
  if (folder.config.architecture == kQwen3BidirectionalArchitecture) {
    // voyage-4-nano: `linear` [num_labels, hidden] on the last hidden state, before any module.
    auto projection = ReadRootProjection(model_dir, folder.config, kQwen3BidirectionalArchitecture);
    if (!projection.ok()) return projection.status();
    if (projection->out_features != folder.config.num_labels) {
      return Status::Error(config_path + ": num_labels is " + std::to_string(folder.config.num_labels) +
                           ", but model.safetensors' \"linear.weight\" projects to " +
                           std::to_string(projection->out_features));
    }
    auto& dense = folder.sentence_transformers.dense;
    dense.insert(dense.begin(), *projection);
  }
  STAMEN_RETURN_IF_ERROR(ReadBgeM3Heads(model_dir, &folder));
  return folder;
}

}  // namespace stamen::engine
