// A read-only memory mapping of a whole file, shared by every tensor viewing into it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/status.h"

namespace stamen::engine {

class MappedFile {
 public:
  // Maps `path` read-only; fails with a message naming the file.
  static StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const std::byte* data_;
  size_t size_;
};

}  // namespace stamen::engine
