// All weights of a model folder by name: one model.safetensors, or the shards listed by
// model.safetensors.index.json. Lookups and loads name the file and tensor on failure.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/safetensors.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine {

class WeightStore {
 public:
  // Opens `directory`/model.safetensors, else `directory`/model.safetensors.index.json.
  static StatusOr<WeightStore> OpenDirectory(const std::string& directory);
  // Opens one safetensors file.
  static StatusOr<WeightStore> OpenFile(const std::string& path);
  // Opens a sharded index; shards are resolved relative to the index's folder.
  static StatusOr<WeightStore> OpenIndex(const std::string& index_path);

  bool Contains(std::string_view name) const { return locations_.count(std::string(name)) > 0; }
  // Every tensor name, in no particular order.
  std::vector<std::string> Names() const;

  // The tensor `name` as `target` (see SafetensorsFile::Load).
  StatusOr<Tensor> Load(std::string_view name, DataType target = DataType::kF32) const;
  // As Load, and fails unless the tensor has exactly `expected` shape.
  StatusOr<Tensor> Load(std::string_view name, const Shape& expected, DataType target = DataType::kF32) const;
  // Row `row` of the 2-D tensor `name` as F32 [1, columns], converting that row only: a yes/no
  // reranker reads two rows of a [vocabulary, hidden] lm_head without loading the rest.
  StatusOr<Tensor> LoadRow(std::string_view name, int64_t row) const;

 private:
  struct Location {
    const SafetensorsFile* file;
    const SafetensorsEntry* entry;
  };
  Status AddFile(std::unique_ptr<SafetensorsFile> file);

  std::string description_;  // the file or index path, for "not found" messages
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string, Location> locations_;
};

}  // namespace stamen::engine
