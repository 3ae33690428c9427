// Resolves tensor names across one file or the shards of a model.safetensors.index.json.
#include "engine/weight_store.h"

#include "common/files.h"
#include "engine/ops/convert.h"

#include <simdjson.h>

#include <filesystem>
#include <map>

namespace stamen::engine {

StatusOr<WeightStore> WeightStore::OpenDirectory(const std::string& directory) {
  const std::filesystem::path folder(directory);
  std::error_code error;
  if (IsFile(folder / "model.safetensors")) {
    return OpenFile((folder / "model.safetensors").string());
  }
  if (IsFile(folder / "model.safetensors.index.json")) {
    return OpenIndex((folder / "model.safetensors.index.json").string());
  }
  std::string message = "no model.safetensors or model.safetensors.index.json in " + directory;
  if (std::filesystem::exists(folder / "pytorch_model.bin", error)) {
    message += " (pytorch_model.bin is not read: convert it to safetensors)";
  }
  return Status::Error(message);
}

StatusOr<WeightStore> WeightStore::OpenFile(const std::string& path) {
  auto file = SafetensorsFile::Open(path);
  if (!file.ok()) return file.status();
  WeightStore store;
  store.description_ = path;
  STAMEN_RETURN_IF_ERROR(store.AddFile(std::move(file.value())));
  return store;
}

StatusOr<WeightStore> WeightStore::OpenIndex(const std::string& index_path) {
  simdjson::dom::parser parser;
  simdjson::padded_string json;
  if (simdjson::padded_string::load(index_path).get(json) != simdjson::SUCCESS) {
    return Status::Error("cannot read " + index_path);
  }
  simdjson::dom::object weight_map;
  simdjson::dom::element root;
  if (auto error = parser.parse(json).get(root); error != simdjson::SUCCESS) {
    return Status::Error(index_path + ": not valid JSON: " + simdjson::error_message(error));
  }
  if (root["weight_map"].get(weight_map) != simdjson::SUCCESS) {
    return Status::Error(index_path + ": no \"weight_map\" object");
  }
  // Names a shard must hold, by shard file name; shard names must stay inside the folder.
  std::map<std::string, std::vector<std::string>> expected;
  for (auto [name, shard] : weight_map) {
    std::string_view shard_name;
    if (shard.get(shard_name) != simdjson::SUCCESS) {
      return Status::Error(index_path + ": weight_map entry '" + std::string(name) + "' is not a file name");
    }
    if (shard_name.empty() || shard_name.find('/') != std::string_view::npos || shard_name == "." ||
        shard_name == "..") {
      return Status::Error(index_path + ": shard name '" + std::string(shard_name) + "' is not a plain file name");
    }
    expected[std::string(shard_name)].push_back(std::string(name));
  }
  if (expected.empty()) return Status::Error(index_path + ": weight_map is empty");
  WeightStore store;
  store.description_ = index_path;
  const std::filesystem::path folder = std::filesystem::path(index_path).parent_path();
  for (const auto& [shard_name, names] : expected) {
    auto file = SafetensorsFile::Open((folder / shard_name).string());
    if (!file.ok()) return Status::Error(index_path + ": shard " + shard_name + ": " + file.status().message());
    for (const std::string& name : names) {
      if (file.value()->Find(name) == nullptr) {
        return Status::Error(index_path + " maps tensor '" + name + "' to " + shard_name +
                             ", which does not contain it");
      }
    }
    STAMEN_RETURN_IF_ERROR(store.AddFile(std::move(file.value())));
  }
  return store;
}

Status WeightStore::AddFile(std::unique_ptr<SafetensorsFile> file) {
  for (const SafetensorsEntry& entry : file->entries()) {
    auto [it, inserted] = locations_.emplace(entry.name, Location{file.get(), &entry});
    if (!inserted) {
      return Status::Error("tensor '" + entry.name + "' is in both " + it->second.file->path() + " and " +
                           file->path());
    }
  }
  files_.push_back(std::move(file));
  return Status();
}

std::vector<std::string> WeightStore::Names() const {
  std::vector<std::string> names;
  names.reserve(locations_.size());
  for (const auto& [name, location] : locations_) names.push_back(name);
  return names;
}

StatusOr<Tensor> WeightStore::Load(std::string_view name, DataType target) const {
  auto it = locations_.find(std::string(name));
  if (it == locations_.end()) return Status::Error(description_ + ": missing tensor '" + std::string(name) + "'");
  return it->second.file->Load(*it->second.entry, target);
}

StatusOr<Tensor> WeightStore::LoadRow(std::string_view name, int64_t row) const {
  auto it = locations_.find(std::string(name));
  if (it == locations_.end()) return Status::Error(description_ + ": missing tensor '" + std::string(name) + "'");
  const SafetensorsEntry& entry = *it->second.entry;
  const std::string where = it->second.file->path() + ": tensor '" + std::string(name) + "'";
  if (entry.shape.size() != 2) return Status::Error(where + " is not a matrix");
  if (row < 0 || row >= entry.shape[0]) {
    return Status::Error(where + " has " + std::to_string(entry.shape[0]) + " rows; row " + std::to_string(row) +
                         " is outside it");
  }
  if (!entry.dtype.has_value()) return it->second.file->Load(entry, DataType::kF32);  // its dtype error
  // As stored: a view of the mapping, so only the row below is converted.
  auto stored = it->second.file->Load(entry, *entry.dtype);
  if (!stored.ok()) return stored;
  auto result = Tensor::Allocate(DataType::kF32, {1, entry.shape[1]});
  if (!result.ok()) return result;
  STAMEN_RETURN_IF_ERROR(ops::Convert(stored->Rows(row, row + 1), *result));
  return result;
}

StatusOr<Tensor> WeightStore::Load(std::string_view name, const Shape& expected, DataType target) const {
  auto tensor = Load(name, target);
  if (!tensor.ok()) return tensor;
  if (!(tensor->shape() == expected)) {
    return Status::Error(locations_.at(std::string(name)).file->path() + ": tensor '" + std::string(name) + "' has shape " +
                         tensor->shape().ToString() + ", expected " + expected.ToString());
  }
  return tensor;
}

}  // namespace stamen::engine
