// bge-m3's heads beside an encoder folder, and FlagEmbedding's lexical weights from token weights.
#include "model_folder/bge_m3.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace stamen::engine {

Status ReadBgeM3Heads(const std::string& model_dir, ModelFolder* folder) {
  namespace fs = std::filesystem;
  const fs::path colbert = fs::path(model_dir) / "colbert_linear.pt";
  const fs::path sparse = fs::path(model_dir) / "sparse_linear.pt";
  std::error_code error;
  const bool has_colbert = fs::is_regular_file(colbert, error);
  const bool has_sparse = fs::is_regular_file(sparse, error);
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

}  // namespace stamen::engine
