#include "gateway/least_tokens.h"

#include <algorithm>

namespace stamen::gateway {

namespace {

// ASCII whitespace: space, and \t \n \v \f \r (9 to 13).
inline int IsSpace(unsigned char byte) { return (byte == ' ') | (static_cast<unsigned char>(byte - '\t') < 5); }

// The words that start in bytes[at, at + Block), at > 0: a fixed count of bytes, which the
// compiler compares as vectors.
template <size_t Block>
inline int WordStartsIn(const unsigned char* bytes, size_t at) {
  int starts = 0;
  for (size_t k = 0; k < Block; ++k) starts += IsSpace(bytes[at + k - 1]) & !IsSpace(bytes[at + k]);
  return starts;
}

}  // namespace

int64_t LeastTokens(std::string_view text, int64_t max_length) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  // A word starts at a non-space byte after a space or at the text's start. Counted without a
  // state carried from byte to byte, blocks of bytes compare as vectors: 4 to 8 times faster
  // than a byte-by-byte loop, which was a quarter of the HTTP threads' time while 256 clients'
  // 500 kB bodies were refused.
  int64_t words = size > 0 && !IsSpace(bytes[0]);
  size_t at = 1;
  for (; at + 64 <= size; at += 64) {
    words += WordStartsIn<64>(bytes, at);
    if (max_length > 0 && words >= max_length) return max_length;
  }
  for (; at + 16 <= size; at += 16) words += WordStartsIn<16>(bytes, at);
  for (; at < size; ++at) words += IsSpace(bytes[at - 1]) & !IsSpace(bytes[at]);
  return max_length > 0 ? std::min(words, max_length) : words;
}

int64_t LeastInputTokens(const Input& input, int64_t max_length) {
  if (const auto* text = std::get_if<std::string>(&input)) return LeastTokens(*text, max_length);
  const auto size = static_cast<int64_t>(std::get<std::vector<int32_t>>(input).size());
  return max_length > 0 ? std::min(size, max_length) : size;
}

}  // namespace stamen::gateway
