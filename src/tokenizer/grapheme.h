// Extended grapheme clusters (Unicode 17.0.0, UAX #29 with GB9c), with exactly the boundaries
// of the Rust crate unicode-segmentation 1.13.3 that Hugging Face tokenizers 0.23.3 uses.
#pragma once

#include <cstddef>
#include <string_view>

namespace stamen::tokenizer {

namespace grapheme_internal {
size_t NextGraphemeLengthSlow(std::string_view text, size_t position);
}  // namespace grapheme_internal

// Byte length of the extended grapheme cluster that starts at `position` (`str::graphemes(true)`
// in Rust): at least 1 when `position < text.size()`, 0 at the end of `text`.
// `position` must be a cluster boundary (0, or a previous position plus the length returned
// for it): the rules are evaluated as if the text started there, which gives the same answer
// at every boundary. `text` should be valid UTF-8; an invalid byte counts as one U+FFFD.
inline size_t NextGraphemeLength(std::string_view text, size_t position) {
  if (position >= text.size()) return 0;
  // Two ASCII characters always have a boundary between them, except CR LF (GB3): a control
  // breaks by GB4/GB5, and no ASCII character extends, prepends or joins. Inline because this
  // covers almost every call on most text.
  const auto lead = static_cast<unsigned char>(text[position]);
  if (lead < 0x80) {
    if (position + 1 == text.size()) return 1;
    const auto next = static_cast<unsigned char>(text[position + 1]);
    if (next < 0x80) return lead == '\r' && next == '\n' ? 2 : 1;
  }
  return grapheme_internal::NextGraphemeLengthSlow(text, position);
}

}  // namespace stamen::tokenizer
