#include "gateway/least_tokens.h"

#include <algorithm>

namespace stamen::gateway {

int64_t LeastTokens(std::string_view text, int64_t max_length) {
  int64_t words = 0;
  bool in_word = false;
  for (const char byte : text) {
    const bool space = byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r' || byte == '\f' || byte == '\v';
    words += !space && !in_word;
    in_word = !space;
  }
  return max_length > 0 ? std::min(words, max_length) : words;
}

int64_t LeastInputTokens(const Input& input, int64_t max_length) {
  if (const auto* text = std::get_if<std::string>(&input)) return LeastTokens(*text, max_length);
  const auto size = static_cast<int64_t>(std::get<std::vector<int32_t>>(input).size());
  return max_length > 0 ? std::min(size, max_length) : size;
}

}  // namespace stamen::gateway
