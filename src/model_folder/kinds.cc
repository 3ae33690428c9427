#include "model_folder/kinds.h"

namespace stamen::engine::ops {

std::optional<PoolingMode> PoolingModeFromName(std::string_view name) {
  for (const PoolingModeNames& names : kPoolingModeNames) {
    if (name == names.name || (!names.alias.empty() && name == names.alias)) return names.mode;
  }
  return std::nullopt;
}

std::string_view PoolingModeName(PoolingMode mode) {
  for (const PoolingModeNames& names : kPoolingModeNames) {
    if (names.mode == mode) return names.name;
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
