// Leftmost-longest added-token matching with Hugging Face's single_word / lstrip / rstrip.
#include "tokenizer/added_token_matcher.h"

#include <cctype>

#include "tokenizer/utf8.h"

namespace stamen::tokenizer {
namespace {

bool IsWordCharacter(char32_t c) {
  return c == '_' || (c < 0x80 ? std::isalnum(static_cast<int>(c)) != 0 : !utf8::IsWhitespace(c));
}

char32_t LastCharacter(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return utf8::Decode(text, start).code_point;
}

}  // namespace

void AddedTokenMatcher::Split(std::string_view text, uint32_t begin, uint32_t end,
                              const std::vector<AddedToken>& tokens, std::vector<TextSegment>* segments) const {
  uint32_t text_start = begin;
  for (uint32_t position = begin; position < end;) {
    const Pattern* best = nullptr;
    if (first_bytes_[static_cast<unsigned char>(text[position])]) {
      const std::string_view rest = text.substr(position, end - position);
      for (const Pattern& pattern : patterns_) {
        if (rest.starts_with(pattern.content) && (best == nullptr || pattern.content.size() > best->content.size())) {
          best = &pattern;
        }
      }
    }
    if (best == nullptr) {
      ++position;
      continue;
    }
    const AddedToken& token = tokens[static_cast<size_t>(best->token)];
    uint32_t match_begin = position;
    uint32_t match_end = position + static_cast<uint32_t>(best->content.size());
    if (token.single_word) {
      const bool word_before = match_begin > begin && IsWordCharacter(LastCharacter(text, match_begin));
      const bool word_after = match_end < end && IsWordCharacter(utf8::Decode(text, match_end).code_point);
      if (word_before || word_after) {
        position = match_end;
        continue;
      }
    }
    while (token.lstrip && match_begin > text_start && utf8::IsWhitespace(LastCharacter(text, match_begin))) {
      size_t start = match_begin - 1;
      while (start > text_start && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      match_begin = static_cast<uint32_t>(start);
    }
    while (token.rstrip && match_end < end) {
      const utf8::Decoded next = utf8::Decode(text, match_end);
      if (!utf8::IsWhitespace(next.code_point)) break;
      match_end += static_cast<uint32_t>(next.length);
    }
    if (match_begin > text_start) segments->push_back({text_start, match_begin, -1});
    segments->push_back({match_begin, match_end, best->token});
    text_start = position = match_end;
  }
  if (text_start < end) segments->push_back({text_start, end, -1});
}

}  // namespace stamen::tokenizer
