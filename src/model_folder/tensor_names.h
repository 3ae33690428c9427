// Whether a model folder's weights hold a tensor, from the safetensors headers alone (no
// weight is mapped or read): what the gateway needs to know of the weights.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace stamen::engine {

// True when model.safetensors (or model.safetensors.index.json's weight_map) names `name`;
// an error when the folder has neither, or one is malformed.
StatusOr<bool> FolderHasTensor(const std::string& model_dir, std::string_view name);

}  // namespace stamen::engine
