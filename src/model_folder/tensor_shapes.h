// The shapes of a safetensors file's tensors, read from its header without loading them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace stamen::engine {

// The shape of each tensor in a safetensors file's header (8 bytes of little-endian length,
// then that many bytes of JSON): {"name": {"dtype", "shape", "data_offsets"}, ...}.
StatusOr<std::map<std::string, std::vector<int64_t>>> ReadTensorShapes(const std::string& path);

}  // namespace stamen::engine
