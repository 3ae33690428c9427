// SHA-256 (FIPS 180-4), streaming: checks downloaded files against the hub's LFS oid.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stamen::hub {

class Sha256 {
 public:
  Sha256() { Reset(); }
  void Reset();
  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // Lowercase hex of the digest; the object must be Reset() before it is used again.
  std::string HexDigest();

 private:
  void Block(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes seen
};

// SHA-256 of a file's contents in lowercase hex; empty when it cannot be read.
std::string Sha256OfFile(const std::string& path);

}  // namespace stamen::hub
