// A projection saved beside the transformer, in the same model.safetensors, as "linear.weight":
// Stanford ColBERT's HF_ColBERT and voyage-4-nano's Qwen3BidirectionalModel both keep theirs so.
// Run as a Dense module (no bias, no activation) after the pooling or on every token.
#include <filesystem>

#include "model_folder/model_config.h"
#include "model_folder/tensor_shapes.h"

namespace stamen::engine {

StatusOr<DenseModuleConfig> ReadRootProjection(const std::string& model_dir, const ModelConfig& config,
                                               std::string_view owner) {
  const std::string weights = (std::filesystem::path(model_dir) / "model.safetensors").string();
  auto shapes = ReadTensorShapes(weights);
  if (!shapes.ok()) return shapes.status();
  const auto linear = shapes->find("linear.weight");
  if (linear == shapes->end() || linear->second.size() != 2 || linear->second[1] != config.hidden_size) {
    return Status::Error(weights + ": a " + std::string(owner) + " checkpoint needs its projection \"linear.weight\" [dim, " +
                         std::to_string(config.hidden_size) + "]");
  }
  return DenseModuleConfig{.folder = model_dir, .in_features = config.hidden_size, .out_features = linear->second[0],
                           .bias = false, .activation = ops::Activation::kIdentity};
}

}  // namespace stamen::engine
