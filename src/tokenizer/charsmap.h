// SentencePiece's precompiled normalization map: a darts-clone double-array trie over UTF-8
// inputs whose values index NUL-terminated replacement strings in a blob.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

class Charsmap {
 public:
  // Parses `[u32 trie bytes][trie units][replacement blob]`; an empty blob is the identity.
  static StatusOr<Charsmap> Parse(std::string_view blob);

  bool empty() const { return units_.empty(); }

  // SentencePiece's rule: the longest key that is a prefix of `text`. Returns its length
  // in bytes (0 when none) and sets `replacement`.
  size_t LongestMatch(std::string_view text, std::string_view* replacement) const;

  // Hugging Face's rule (spm_precompiled `transform`): the shortest key that is a prefix of
  // `text`, searching no further than a NUL byte. Returns false when none matches.
  bool ShortestMatch(std::string_view text, std::string_view* replacement) const;

  // True when some key starts with `prefix` (or equals it).
  bool HasKeyStartingWith(std::string_view prefix) const;

 private:
  // Calls `on_match(length, value)` for each key that prefixes `text`, shortest first, until
  // it returns false.
  template <typename OnMatch>
  void ForEachPrefix(std::string_view text, bool stop_at_nul, OnMatch on_match) const;
  std::string_view ReplacementAt(uint32_t value) const;

  std::vector<uint32_t> units_;
  std::string replacements_;
};

}  // namespace stamen::tokenizer
