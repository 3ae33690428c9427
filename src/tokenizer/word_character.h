// The word characters of Hugging Face's single_word rule: an added token with single_word is
// refused when the character just before or just after it matches the Rust regex crate's
// Unicode \w (Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control; Unicode
// 16.0.0, the tables of regex-syntax 0.8.11 that Hugging Face tokenizers 0.23.3 links).
#pragma once

namespace stamen::tokenizer {

namespace word_character_internal {
bool IsWordCharacterSlow(char32_t code_point);
}  // namespace word_character_internal

// Whether `code_point` is a \w character. Surrogates and values past U+10FFFF are not.
inline bool IsWordCharacter(char32_t code_point) {
  // ASCII, which most neighbours of added tokens are: [0-9A-Za-z_]. Inline so that this
  // common case costs a few compares.
  if (code_point < 0x80) {
    const char32_t lower = code_point | 0x20;
    return (code_point >= '0' && code_point <= '9') || (lower >= 'a' && lower <= 'z') || code_point == '_';
  }
  return word_character_internal::IsWordCharacterSlow(code_point);
}

}  // namespace stamen::tokenizer
