// Test helpers: a temporary folder removed on destruction, and a safetensors writer whose
// output tests may corrupt on purpose.
#pragma once

#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace stamen::engine::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "stamen_engine_XXXXXX").string();
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  std::string File(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string ReadText(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Cosine similarity of two equally long vectors.
inline double Cosine(std::span<const float> a, std::span<const float> b) {
  double dot = 0.0, norm_a = 0.0, norm_b = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double{a[i]} * b[i];
    norm_a += double{a[i]} * a[i];
    norm_b += double{b[i]} * b[i];
  }
  return dot / std::sqrt(norm_a * norm_b);
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Builds a safetensors file: tensors are laid out in order of addition.
class SafetensorsBuilder {
 public:
  void Add(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
           const std::string& bytes) {
    std::string shape_text;
    for (int64_t dim : shape) shape_text += (shape_text.empty() ? "" : ",") + std::to_string(dim);
    entries_ += (entries_.empty() ? "" : ",") + std::string("\"") + name + "\":{\"dtype\":\"" + dtype +
                "\",\"shape\":[" + shape_text + "],\"data_offsets\":[" + std::to_string(data_.size()) + "," +
                std::to_string(data_.size() + bytes.size()) + "]}";
    data_ += bytes;
  }
  void AddFloats(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values) {
    std::string bytes(values.size() * 4, '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());
    Add(name, "F32", shape, bytes);
  }
  std::string Header() const { return "{\"__metadata__\":{\"format\":\"pt\"}" + (entries_.empty() ? "" : "," + entries_) + "}"; }
  // The file with `header` (default: the real one) and its true length prefix.
  std::string Bytes(const std::string& header) const {
    std::string text = header;
    const uint64_t length = text.size();
    std::string prefix(8, '\0');
    std::memcpy(prefix.data(), &length, 8);
    return prefix + text + data_;
  }
  std::string Bytes() const { return Bytes(Header()); }

 private:
  std::string entries_;
  std::string data_;
};

}  // namespace stamen::engine::testing
