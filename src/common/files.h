// Questions about paths that a missing or unreadable path answers "no" to, never by throwing.
#pragma once

#include <filesystem>
#include <system_error>

namespace stamen {

// Whether `path` names a regular file (following links).
inline bool IsFile(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

}  // namespace stamen
