// The shapes of a safetensors file's tensors from its header alone (static_embedding.cc,
// stanford_colbert.cc describe models by them without loading the weights).
#include "model_folder/tensor_shapes.h"

#include <fstream>

#include <simdjson.h>

namespace stamen::engine {

// The shape of each tensor in a safetensors file's header (8 bytes of little-endian length,
// then that many bytes of JSON): {"name": {"dtype", "shape", "data_offsets"}, ...}.
StatusOr<std::map<std::string, std::vector<int64_t>>> ReadTensorShapes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::Error("cannot read " + path);
  unsigned char length_bytes[8] = {};
  file.read(reinterpret_cast<char*>(length_bytes), 8);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
  constexpr uint64_t kLongestHeader = uint64_t{100} << 20;  // as the engine's reader allows
  if (!file || length == 0 || length > kLongestHeader) return Status::Error(path + ": not a safetensors file");
  simdjson::padded_string header(static_cast<size_t>(length));
  file.read(header.data(), static_cast<std::streamsize>(length));
  if (!file) return Status::Error(path + ": the safetensors header is cut short");
  simdjson::dom::parser parser;
  simdjson::dom::object tensors;
  if (parser.parse(header).get(tensors) != simdjson::SUCCESS) {
    return Status::Error(path + ": the safetensors header is not a JSON object");
  }
  std::map<std::string, std::vector<int64_t>> shapes;
  for (auto [name, entry] : tensors) {
    if (name == "__metadata__") continue;
    simdjson::dom::array dims;
    if (entry["shape"].get(dims) != simdjson::SUCCESS) {
      return Status::Error(path + ": tensor '" + std::string(name) + "' has no shape");
    }
    std::vector<int64_t>& shape = shapes[std::string(name)];
    for (simdjson::dom::element dim : dims) {
      int64_t value = 0;
      if (dim.get(value) != simdjson::SUCCESS || value < 0) {
        return Status::Error(path + ": tensor '" + std::string(name) + "' has a bad shape");
      }
      shape.push_back(value);
    }
  }
  return shapes;
}

}  // namespace stamen::engine
