// Reader for the stored (uncompressed) entries of a zip archive, as torch.save writes them: the
// file is mapped and each entry is a view of its bytes. Compressed entries are refused by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/mapped_file.h"
#include "engine/status.h"

namespace stamen::engine {

class ZipArchive {
 public:
  // Maps `path` and reads its central directory (zip64 sizes and offsets included); every entry
  // must lie inside the file. Fails, naming the file, on anything else.
  static StatusOr<ZipArchive> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  // Every entry's name, in name order.
  std::vector<std::string> Names() const;
  bool Contains(std::string_view name) const { return entries_.count(std::string(name)) > 0; }
  // The bytes of entry `name` (valid while this archive or a copy of file() lives); an error
  // when there is no such entry or it is compressed.
  StatusOr<std::span<const std::byte>> Read(std::string_view name) const;
  // The mapping, for views that must keep the bytes alive.
  const std::shared_ptr<const MappedFile>& file() const { return file_; }

 private:
  struct Entry {
    uint16_t method = 0;  // 0: stored; anything else is compressed
    uint64_t compressed_size = 0;
    uint64_t size = 0;
    uint64_t local_header = 0;
  };
  Status ReadCentralDirectory();

  std::shared_ptr<const MappedFile> file_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace stamen::engine
