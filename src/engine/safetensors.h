// Reader for the safetensors format: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the raw data. The file is mapped,
// validated once at open, and tensors are views of the mapping or converted copies.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/mapped_file.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine {

// One tensor as the header describes it; offsets are relative to the start of the data.
struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;         // as written: "F32", "BF16", "F64", …
  std::optional<DataType> dtype;  // unset for dtypes the engine does not read (F64, I8, …)
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Largest header accepted; the reference implementation refuses more than 100 MB too.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  // Maps and validates `path`: header length within the file, well-formed JSON, known dtypes,
  // byte ranges inside the data area, not overlapping, and sized dtype × shape.
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsEntry* Find(std::string_view name) const;

  // The tensor as `target`: a zero-copy view of the mapping (read-only memory; it keeps the
  // file mapped) when no conversion is needed and the data is aligned, else a new tensor.
  // F16 and BF16 convert to F32; other dtypes load only as themselves.
  StatusOr<Tensor> Load(const SafetensorsEntry& entry, DataType target) const;

 private:
  SafetensorsFile() = default;
  Status ParseHeader(std::string_view header, uint64_t data_size);

  std::shared_ptr<const MappedFile> file_;
  const std::byte* data_start_ = nullptr;
  std::vector<SafetensorsEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace stamen::engine
