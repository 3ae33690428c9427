// bge-m3's heads beside an encoder folder, and FlagEmbedding's lexical weights from token weights.
#include "model_folder/bge_m3.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "common/files.h"
#include "model_folder/json_document.h"

namespace stamen::engine {

Status ReadBgeM3Heads(const std::string& model_dir, ModelFolder* folder) {
  namespace fs = std::filesystem;
  const fs::path colbert = fs::path(model_dir) / "colbert_linear.pt";
  const fs::path sparse = fs::path(model_dir) / "sparse_linear.pt";
  const bool has_colbert = IsFile(colbert);
  const bool has_sparse = IsFile(sparse);
  if (!has_colbert && !has_sparse) return Status();
  if (has_colbert != has_sparse) {
    return Status::Error(model_dir + ": a bge-m3 folder needs both colbert_linear.pt and sparse_linear.pt; it has only " +
                         (has_colbert ? "colbert_linear.pt" : "sparse_linear.pt"));
  }
  ModelConfig& config = folder->config;
  if (config.decoder || config.head != ModelHead::kNone || config.family == ModelFamily::kStaticEmbedding) {
    return Status::Error(model_dir + ": colbert_linear.pt and sparse_linear.pt (bge-m3's heads) go beside an encoder "
                         "without a head, not " + config.architecture);
  }
  config.bge_m3.enabled = true;
  config.bge_m3.colbert_linear_path = colbert.string();
  config.bge_m3.sparse_linear_path = sparse.string();
  if (!folder->sentence_transformers.pooling.has_value()) folder->sentence_transformers.pooling = ops::PoolingMode::kCls;
  return Status();
}

std::vector<std::pair<int32_t, float>> LexicalWeights(std::span<const int32_t> ids, std::span<const float> weights,
                                                      std::span<const int32_t> dropped_ids) {
  std::map<int32_t, float> largest;
  for (size_t i = 0; i < ids.size() && i < weights.size(); ++i) {
    if (!(weights[i] > 0.0f)) continue;
    if (std::find(dropped_ids.begin(), dropped_ids.end(), ids[i]) != dropped_ids.end()) continue;
    float& kept = largest[ids[i]];
    kept = std::max(kept, weights[i]);
  }
  return {largest.begin(), largest.end()};
}

StatusOr<std::vector<int32_t>> BgeM3DroppedIds(const std::string& model_dir, const ModelTokenizer& tokenizer) {
  if (tokenizer.kind() == ModelTokenizer::Kind::kFairseqSentencePiece) {
    return std::vector<int32_t>{kFairseqBos, kFairseqEos, kFairseqPad, kFairseqUnk};
  }
  std::pair<const char*, std::string> tokens[] = {
      {"cls_token", "<s>"}, {"eos_token", "</s>"}, {"pad_token", "<pad>"}, {"unk_token", "<unk>"}};
  const std::filesystem::path config_path = std::filesystem::path(model_dir) / "tokenizer_config.json";
  if (IsFile(config_path)) {
    auto document = JsonDocument::Load(config_path.string());
    if (!document.ok()) return document.status();
    const JsonObject root = (*document)->root();
    for (auto& [key, name] : tokens) {
      if (simdjson::dom::object added; root.raw()[key].get(added) == simdjson::SUCCESS) {
        STAMEN_RETURN_IF_ERROR(JsonObject(root.file(), added).Required("content", &name));
      } else {
        STAMEN_RETURN_IF_ERROR(root.Optional(key, &name));
      }
    }
  }
  std::vector<int32_t> ids;
  for (const auto& [key, name] : tokens) {
    const int32_t id = tokenizer.tokenizer().PieceToId(name);
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

}  // namespace stamen::engine
