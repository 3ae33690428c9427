#include "model_folder/kinds.h"

namespace stamen::engine::ops {

std::optional<PoolingMode> PoolingModeFromName(std::string_view name) {
  if (name == "lasttoken") return PoolingMode::kLastToken;  // sentence-transformers' spelling
  for (const PoolingMode mode : kPoolingModes) {
    if (name == PoolingModeName(mode)) return mode;
  }
  return std::nullopt;
}

std::string_view PoolingModeName(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::kCls: return "cls";
    case PoolingMode::kMean: return "mean";
    case PoolingMode::kMax: return "max";
    case PoolingMode::kLastToken: return "last_token";
    case PoolingMode::kWeightedMean: return "weightedmean";
    case PoolingMode::kMeanSqrtLen: return "mean_sqrt_len_tokens";
    case PoolingMode::kSplade: return "splade";
  }
  return "?";
}

std::optional<Activation> ActivationFromName(std::string_view name) {
  if (name == "gelu") return Activation::kGeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "tanh") return Activation::kTanh;
  return std::nullopt;
}

}  // namespace stamen::engine::ops
