#include "model_folder/tensor_names.h"

#include <simdjson.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "common/files.h"

namespace stamen::engine {

namespace {

// The keys of `path`'s JSON object at `key` (the whole document when `key` is empty) hold
// `name`. A safetensors file starts with its header's length (8 bytes, little endian), then the
// header: a JSON object whose keys are the tensor names.
StatusOr<bool> SafetensorsHas(const std::string& path, std::string_view name) {
  std::ifstream file(path, std::ios::binary);
  uint64_t length = 0;
  if (!file.read(reinterpret_cast<char*>(&length), sizeof(length))) return Status::Error("cannot read " + path);
  if (length == 0 || length > (uint64_t{100} << 20)) return Status::Error(path + ": not a safetensors file");
  std::string header(length, '\0');
  if (!file.read(header.data(), static_cast<std::streamsize>(length))) return Status::Error(path + ": truncated header");
  simdjson::dom::parser parser;
  simdjson::dom::object tensors;
  if (parser.parse(header).get(tensors) != simdjson::SUCCESS) return Status::Error(path + ": malformed header");
  return tensors[name].error() == simdjson::SUCCESS;
}

StatusOr<bool> IndexHas(const std::string& path, std::string_view name) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::dom::object weight_map;
  if (parser.load(path).get(root) != simdjson::SUCCESS || root["weight_map"].get(weight_map) != simdjson::SUCCESS) {
    return Status::Error(path + ": no \"weight_map\" object");
  }
  return weight_map[name].error() == simdjson::SUCCESS;
}

}  // namespace

StatusOr<bool> FolderHasTensor(const std::string& model_dir, std::string_view name) {
  const std::filesystem::path folder(model_dir);
  if (IsFile(folder / "model.safetensors")) {
    return SafetensorsHas((folder / "model.safetensors").string(), name);
  }
  if (IsFile(folder / "model.safetensors.index.json")) {
    return IndexHas((folder / "model.safetensors.index.json").string(), name);
  }
  return Status::Error("no model.safetensors or model.safetensors.index.json in " + model_dir);
}

}  // namespace stamen::engine
