// Added tokens (`[CLS]`, `<mask>`, …) found in text before the model sees it, as Hugging
// Face's AddedVocabulary splits them out: leftmost-longest matches, with the single_word,
// lstrip and rstrip rules. Shared by the Unigram, WordPiece and BPE tokenizers.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/huggingface_config.h"
#include "tokenizer/scratch_buffers.h"

namespace stamen::tokenizer {

// A set of added tokens matched leftmost-longest in text, as Hugging Face's Aho-Corasick
// matcher does. The patterns form a byte trie, so the longest one at a text position is found
// in one step per byte matched, however many patterns share a prefix. EmbeddingGemma has
// 6,322 added tokens starting with "<": trying each in turn took 270 M instructions to encode
// a 4,098-token HTML page, the trie 6.1 M (docs/BENCHMARKS.md, "Added tokens").
class AddedTokenMatcher {
 public:
  // `token` indexes the added-token list later passed to Split. When two tokens have the same
  // content, the first one added is matched. Empty content is ignored.
  void Add(int32_t token, std::string_view content);
  bool empty() const { return nodes_.size() == 1; }

  // Splits text[begin, end) into text and added-token segments, appended to `segments`.
  void Split(std::string_view text, uint32_t begin, uint32_t end, const std::vector<AddedToken>& tokens,
             std::vector<TextSegment>* segments) const;

 private:
  static constexpr int32_t kNoNode = 0;  // node 0 is the root, which is nobody's child

  struct Edge {
    unsigned char byte;
    int32_t node;
  };
  struct Node {
    int32_t token = -1;        // the pattern ending here (an index into the added tokens), or -1
    std::vector<Edge> edges;   // sorted by byte
  };
  struct Match {
    int32_t token;  // -1: no pattern starts here
    uint32_t length;
  };

  int32_t Child(int32_t node, unsigned char byte) const;
  // The longest pattern that text[position, end) starts with.
  Match LongestAt(std::string_view text, uint32_t position, uint32_t end) const;

  // The root's children by byte, read for every byte of text: most bytes start no pattern,
  // and one load tells.
  std::array<int32_t, 256> root_children_{};
  std::vector<Node> nodes_ = std::vector<Node>(1);
};

}  // namespace stamen::tokenizer
