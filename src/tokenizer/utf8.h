// UTF-8 helpers shared by the normalizers and the segmenter: strict decoding (as
// SentencePiece does it), character lengths, and Unicode White_Space (as Rust's
// `char::is_whitespace`, which Hugging Face's normalizers use).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stamen::tokenizer::utf8 {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Length of the character that starts with `lead`, judged by its lead byte alone
// (continuation and invalid bytes count 1). This is SentencePiece's `OneCharLen`.
inline size_t LengthFromLeadByte(unsigned char lead) {
  static constexpr unsigned char kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

struct Decoded {
  char32_t code_point;  // kReplacementCharacter when invalid
  size_t length;        // bytes consumed: 1 for an invalid sequence
  bool valid;
};

// Strict decoding: rejects overlong forms, surrogates, code points above U+10FFFF and
// truncated sequences; an invalid sequence consumes exactly one byte.
inline Decoded Decode(std::string_view text, size_t position) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data()) + position;
  const size_t available = text.size() - position;
  const unsigned char lead = bytes[0];
  auto is_trail = [](unsigned char byte) { return (byte & 0xC0) == 0x80; };
  auto is_valid_code_point = [](char32_t c) { return c < 0xD800 || (c >= 0xE000 && c <= 0x10FFFF); };
  if (lead < 0x80) return {lead, 1, true};
  if (available >= 2 && (lead & 0xE0) == 0xC0 && is_trail(bytes[1])) {
    const char32_t c = ((lead & 0x1F) << 6) | (bytes[1] & 0x3F);
    if (c >= 0x80) return {c, 2, true};
  } else if (available >= 3 && (lead & 0xF0) == 0xE0 && is_trail(bytes[1]) && is_trail(bytes[2])) {
    const char32_t c = ((lead & 0x0F) << 12) | ((bytes[1] & 0x3F) << 6) | (bytes[2] & 0x3F);
    if (c >= 0x800 && is_valid_code_point(c)) return {c, 3, true};
  } else if (available >= 4 && (lead & 0xF8) == 0xF0 && is_trail(bytes[1]) && is_trail(bytes[2]) &&
             is_trail(bytes[3])) {
    const char32_t c = ((lead & 0x07) << 18) | ((bytes[1] & 0x3F) << 12) | ((bytes[2] & 0x3F) << 6) |
                       (bytes[3] & 0x3F);
    if (c >= 0x10000 && is_valid_code_point(c)) return {c, 4, true};
  }
  return {kReplacementCharacter, 1, false};
}

inline void Append(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// Unicode White_Space, the set Rust's `char::is_whitespace` tests.
inline bool IsWhitespace(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  switch (c) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

// Replaces every invalid sequence by U+FFFD, one per maximal invalid subpart, as Python's
// `bytes.decode("utf-8", "replace")` and Rust's `String::from_utf8_lossy` do. Returns false
// (and leaves `out` untouched) when `text` is already valid. With `origins`, also records
// for each byte of `out` the offset in `text` it came from, plus one entry for the end.
bool ReplaceInvalid(std::string_view text, std::string* out, std::vector<uint32_t>* origins = nullptr);

}  // namespace stamen::tokenizer::utf8
