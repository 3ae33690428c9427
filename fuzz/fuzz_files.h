// For the fuzz targets of readers that take a path: the input's bytes written to a file in a
// private scratch folder (on tmpfs when there is one), removed when the process exits.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace stamen::fuzz {

inline const std::string& ScratchFolder() {
  static const std::string folder = [] {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string pattern = std::string(base) + "/stamen_fuzz_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    static struct Remover {
      std::string path;
      ~Remover() {
        std::error_code error;
        std::filesystem::remove_all(path, error);
      }
    } remover{pattern};
    return pattern;
  }();
  return folder;
}

// Writes `bytes` to `path` (parent folders made), replacing what was there.
inline void WriteFile(const std::string& path, std::string_view bytes) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) std::abort();
  std::fclose(file);
}

inline void RemoveFile(const std::string& path) {
  std::error_code error;
  std::filesystem::remove(path, error);
}

}  // namespace stamen::fuzz
