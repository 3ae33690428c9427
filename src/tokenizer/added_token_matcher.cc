// Leftmost-longest added-token matching with Hugging Face's single_word / lstrip / rstrip,
// over a byte trie of the tokens.
#include "tokenizer/added_token_matcher.h"

#include <algorithm>

#include "tokenizer/utf8.h"
#include "tokenizer/word_character.h"

namespace stamen::tokenizer {
namespace {

char32_t LastCharacter(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return utf8::Decode(text, start).code_point;
}

}  // namespace

int32_t AddedTokenMatcher::Child(int32_t node, unsigned char byte) const {
  if (node == 0) return root_children_[byte];
  const std::vector<Edge>& edges = nodes_[static_cast<size_t>(node)].edges;
  const auto found =
      std::lower_bound(edges.begin(), edges.end(), byte, [](const Edge& edge, unsigned char b) { return edge.byte < b; });
  return found != edges.end() && found->byte == byte ? found->node : kNoNode;
}

void AddedTokenMatcher::Add(int32_t token, std::string_view content) {
  if (content.empty()) return;
  int32_t node = 0;
  for (const char c : content) {
    const auto byte = static_cast<unsigned char>(c);
    int32_t child = Child(node, byte);
    if (child == kNoNode) {
      child = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      if (node == 0) {
        root_children_[byte] = child;
      } else {
        std::vector<Edge>& edges = nodes_[static_cast<size_t>(node)].edges;
        const auto at = std::lower_bound(edges.begin(), edges.end(), byte,
                                         [](const Edge& edge, unsigned char b) { return edge.byte < b; });
        edges.insert(at, {byte, child});
      }
    }
    node = child;
  }
  // The first of equal contents stays: the linear scan this trie replaced kept the first
  // pattern of the longest length.
  if (nodes_[static_cast<size_t>(node)].token < 0) nodes_[static_cast<size_t>(node)].token = token;
}

AddedTokenMatcher::Match AddedTokenMatcher::LongestAt(std::string_view text, uint32_t position, uint32_t end) const {
  Match longest{-1, 0};
  int32_t node = root_children_[static_cast<unsigned char>(text[position])];
  for (uint32_t length = 1; node != kNoNode; ++length) {
    if (nodes_[static_cast<size_t>(node)].token >= 0) longest = {nodes_[static_cast<size_t>(node)].token, length};
    if (position + length == end) break;
    node = Child(node, static_cast<unsigned char>(text[position + length]));
  }
  return longest;
}

void AddedTokenMatcher::Split(std::string_view text, uint32_t begin, uint32_t end,
                              const std::vector<AddedToken>& tokens, std::vector<TextSegment>* segments) const {
  uint32_t text_start = begin;
  for (uint32_t position = begin; position < end;) {
    const Match match = LongestAt(text, position, end);
    if (match.token < 0) {
      ++position;
      continue;
    }
    const AddedToken& token = tokens[static_cast<size_t>(match.token)];
    uint32_t match_begin = position;
    uint32_t match_end = position + match.length;
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
    segments->push_back({match_begin, match_end, match.token});
    text_start = position = match_end;
  }
  if (text_start < end) segments->push_back({text_start, end, -1});
}

}  // namespace stamen::tokenizer
