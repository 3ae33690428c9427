// Added tokens (`[CLS]`, `<mask>`, …) found in text before the model sees it, as Hugging
// Face's AddedVocabulary splits them out: leftmost-longest matches, with the single_word,
// lstrip and rstrip rules. Shared by the Unigram and WordPiece tokenizers.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/huggingface_config.h"
#include "tokenizer/scratch_buffers.h"

namespace stamen::tokenizer {

// A set of added tokens matched leftmost-longest in text, as Hugging Face's Aho-Corasick
// matcher does; a 256-bit first-byte filter keeps the scan cheap.
class AddedTokenMatcher {
 public:
  // `token` indexes the added-token list later passed to Split; `content` is not empty.
  void Add(int32_t token, std::string content) {
    first_bytes_[static_cast<unsigned char>(content[0])] = true;
    patterns_.push_back({token, std::move(content)});
  }
  bool empty() const { return patterns_.empty(); }

  // Splits text[begin, end) into text and added-token segments, appended to `segments`.
  void Split(std::string_view text, uint32_t begin, uint32_t end, const std::vector<AddedToken>& tokens,
             std::vector<TextSegment>* segments) const;

 private:
  struct Pattern {
    int32_t token;  // index into the added tokens
    std::string content;
  };
  std::array<bool, 256> first_bytes_{};
  std::vector<Pattern> patterns_;
};

}  // namespace stamen::tokenizer
