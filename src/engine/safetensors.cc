// Parses and validates safetensors headers with simdjson; loads tensors as views or conversions.
#include "engine/safetensors.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "engine/ops/convert.h"

namespace stamen::engine {
namespace {

struct DtypeInfo {
  std::string_view name;
  uint64_t size;
  std::optional<DataType> dtype;
};

// Every dtype of the format, so files holding ones we do not compute with still validate.
constexpr DtypeInfo kDtypes[] = {
    {"F32", 4, DataType::kF32}, {"F16", 2, DataType::kF16}, {"BF16", 2, DataType::kBF16},
    {"I32", 4, DataType::kI32}, {"I64", 8, DataType::kI64}, {"F64", 8, std::nullopt},
    {"I8", 1, std::nullopt},    {"U8", 1, std::nullopt},    {"BOOL", 1, std::nullopt},
    {"I16", 2, std::nullopt},   {"U16", 2, std::nullopt},   {"U32", 4, std::nullopt},
    {"U64", 8, std::nullopt},   {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const DtypeInfo* FindDtype(std::string_view name) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::string Quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

// Reads a JSON array of non-negative integers.
bool ReadUnsignedArray(simdjson::simdjson_result<simdjson::dom::element> element, std::vector<uint64_t>* values) {
  simdjson::dom::array array;
  if (element.get(array) != simdjson::SUCCESS) return false;
  for (simdjson::dom::element item : array) {
    uint64_t value = 0;
    if (item.get(value) != simdjson::SUCCESS) return false;
    values->push_back(value);
  }
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  auto mapped = MappedFile::Open(path);
  if (!mapped.ok()) return mapped.status();
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->file_ = std::move(mapped.value());
  const size_t size = file->file_->size();
  if (size < 8) {
    return Status::Error(path + ": not a safetensors file: " + std::to_string(size) +
                         " bytes is shorter than the 8-byte header length");
  }
  uint64_t header_length = 0;
  std::memcpy(&header_length, file->file_->data(), 8);  // little-endian on every target we build
  if (header_length > kMaxHeaderBytes) {
    return Status::Error(path + ": header length " + std::to_string(header_length) +
                         " exceeds the limit of " + std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (header_length > size - 8) {
    return Status::Error(path + ": header length " + std::to_string(header_length) +
                         " runs past the end of the file (" + std::to_string(size) +
                         " bytes): truncated or not safetensors");
  }
  const auto* header = reinterpret_cast<const char*>(file->file_->data()) + 8;
  file->data_start_ = file->file_->data() + 8 + header_length;
  Status status = file->ParseHeader(std::string_view(header, header_length), size - 8 - header_length);
  if (!status.ok()) return Status::Error(path + ": " + status.message());
  return file;
}

Status SafetensorsFile::ParseHeader(std::string_view header, uint64_t data_size) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(header);
  simdjson::dom::object root;
  if (auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS) {
    return Status::Error(std::string("header is not a JSON object: ") + simdjson::error_message(error));
  }
  for (auto [key, value] : root) {
    if (key == "__metadata__") {
      simdjson::dom::object metadata;
      if (value.get(metadata) != simdjson::SUCCESS) return Status::Error("__metadata__ is not an object");
      for (auto [meta_key, meta_value] : metadata) {
        std::string_view text;
        if (meta_value.get(text) == simdjson::SUCCESS) metadata_[std::string(meta_key)] = std::string(text);
      }
      continue;
    }
    SafetensorsEntry entry;
    entry.name = std::string(key);
    const std::string where = "tensor " + Quoted(key);
    std::string_view dtype_name;
    if (value["dtype"].get(dtype_name) != simdjson::SUCCESS) return Status::Error(where + " has no string \"dtype\"");
    const DtypeInfo* dtype = FindDtype(dtype_name);
    if (dtype == nullptr) return Status::Error(where + " has unknown dtype " + Quoted(dtype_name));
    entry.dtype_name = std::string(dtype_name);
    entry.dtype = dtype->dtype;
    std::vector<uint64_t> dims;
    if (!ReadUnsignedArray(value["shape"], &dims)) {
      return Status::Error(where + " has no \"shape\" list of non-negative integers");
    }
    uint64_t elements = 1;
    for (uint64_t dim : dims) {
      if (dim != 0 && elements > std::numeric_limits<uint64_t>::max() / 16 / dim) {
        return Status::Error(where + " has a shape too large to address");
      }
      elements *= dim;
      entry.shape.push_back(static_cast<int64_t>(dim));
    }
    std::vector<uint64_t> offsets;
    if (!ReadUnsignedArray(value["data_offsets"], &offsets) || offsets.size() != 2) {
      return Status::Error(where + " has no \"data_offsets\" pair of non-negative integers");
    }
    entry.begin = offsets[0];
    entry.end = offsets[1];
    const std::string range = "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
    if (entry.begin > entry.end || entry.end > data_size) {
      return Status::Error(where + " has data_offsets " + range + " outside the data area of " +
                           std::to_string(data_size) + " bytes (truncated file?)");
    }
    if (entry.end - entry.begin != elements * dtype->size) {
      return Status::Error(where + " has " + std::to_string(entry.end - entry.begin) + " bytes but " +
                           entry.dtype_name + " with " + std::to_string(elements) + " elements needs " +
                           std::to_string(elements * dtype->size));
    }
    if (!index_.emplace(entry.name, entries_.size()).second) {
      return Status::Error(where + " appears twice in the header");
    }
    entries_.push_back(std::move(entry));
  }
  std::vector<const SafetensorsEntry*> by_offset;
  for (const SafetensorsEntry& entry : entries_) {
    if (entry.end > entry.begin) by_offset.push_back(&entry);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      return Status::Error("tensors " + Quoted(by_offset[i - 1]->name) + " and " + Quoted(by_offset[i]->name) +
                           " overlap");
    }
  }
  return Status();
}

const SafetensorsEntry* SafetensorsFile::Find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

StatusOr<Tensor> SafetensorsFile::Load(const SafetensorsEntry& entry, DataType target) const {
  const std::string where = path() + ": tensor " + Quoted(entry.name);
  if (!entry.dtype.has_value()) {
    return Status::Error(where + " has dtype " + entry.dtype_name +
                         "; the engine reads F32, F16, BF16, I32 and I64");
  }
  const DataType source = *entry.dtype;
  const bool converts = source != target;
  const bool float_source = source == DataType::kF32 || source == DataType::kF16 || source == DataType::kBF16;
  const bool float_target = target == DataType::kF32 || target == DataType::kF16 || target == DataType::kBF16;
  if (converts && !(float_source && float_target)) {
    return Status::Error(where + " has dtype " + entry.dtype_name + " and cannot be read as " +
                         std::string(DataTypeName(target)));
  }
  auto shape = Shape::FromDims(entry.shape);
  if (!shape.ok()) return Status::Error(where + ": " + shape.status().message());
  auto* bytes = const_cast<std::byte*>(data_start_ + entry.begin);
  // The mapping is read-only memory: a view stays valid while any copy of the tensor lives.
  Tensor mapped = Tensor::Wrap(bytes, source, *shape, Device::kCpu, file_);
  const bool aligned = reinterpret_cast<uintptr_t>(bytes) % ElementSize(source) == 0;
  if (!converts && aligned) return mapped;
  auto copy = Tensor::Allocate(target, *shape);
  if (!copy.ok()) return Status::Error(where + ": " + copy.status().message());
  Status status = ops::Convert(mapped, *copy);  // also handles unaligned sources
  if (!status.ok()) return Status::Error(where + ": " + status.message());
  return copy;
}

}  // namespace stamen::engine
