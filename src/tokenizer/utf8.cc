// Lossy UTF-8 repair with the "maximal subpart" rule (Unicode 15, §3.9, U+FFFD substitution).
#include "tokenizer/utf8.h"

namespace stamen::tokenizer::utf8 {
namespace {

// Bytes of the longest prefix of text[position...] that could start a valid sequence
// (at least 1): the maximal subpart replaced by one U+FFFD.
size_t MaximalSubpart(std::string_view text, size_t position) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char lead = bytes[position];
  size_t needed = 0;
  unsigned char low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) needed = 1;
  else if (lead >= 0xE0 && lead <= 0xEF) {
    needed = 2;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    needed = 3;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  }
  size_t length = 1;
  for (size_t i = 0; i < needed && position + length < text.size(); ++i) {
    const unsigned char byte = bytes[position + length];
    if (byte < low || byte > high) break;
    low = 0x80;
    high = 0xBF;
    ++length;
  }
  return length;
}

}  // namespace

bool ReplaceInvalid(std::string_view text, std::string* out, std::vector<uint32_t>* origins) {
  size_t position = 0;
  while (position < text.size()) {
    const Decoded decoded = Decode(text, position);
    if (!decoded.valid) break;
    position += decoded.length;
  }
  if (position == text.size()) return false;
  out->assign(text.substr(0, position));
  if (origins != nullptr) {
    origins->clear();
    for (uint32_t i = 0; i < position; ++i) origins->push_back(i);
  }
  auto note_origins = [&](size_t count, size_t origin) {
    if (origins != nullptr) origins->insert(origins->end(), count, static_cast<uint32_t>(origin));
  };
  while (position < text.size()) {
    const Decoded decoded = Decode(text, position);
    if (decoded.valid) {
      out->append(text.substr(position, decoded.length));
      for (size_t i = 0; i < decoded.length; ++i) note_origins(1, position + i);
      position += decoded.length;
    } else {
      out->append(kReplacementUtf8);
      note_origins(kReplacementUtf8.size(), position);
      position += MaximalSubpart(text, position);
    }
  }
  note_origins(1, text.size());
  return true;
}

}  // namespace stamen::tokenizer::utf8
