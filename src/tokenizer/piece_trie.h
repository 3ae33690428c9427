// The vocabulary trie that Viterbi walks: a double array (child = base + byte, Aoe 1989)
// whose `check[]` is replaced by a 256-bit child bitmap in each node, and whose node holds
// the piece's id and score, so one byte step touches exactly one 64-byte cache line.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/huge_page_buffer.h"

namespace stamen::tokenizer {

struct alignas(64) TrieNode {
  uint64_t child_bits[4];  // bit b set: a child for byte b exists, at nodes[base + b]
  int32_t base;
  int32_t token_id;        // piece ending here, or -1
  double score;            // that piece's score as Viterbi adds it
  uint64_t unused[2];

  bool HasChild(unsigned char byte) const { return (child_bits[byte >> 6] >> (byte & 63)) & 1; }
};
static_assert(sizeof(TrieNode) == 64);

struct TrieEntry {
  std::string_view key;  // bytes of the piece; empty keys are ignored
  int32_t token_id;      // -1 keeps the path but marks no piece (SentencePiece's UNUSED)
  double score;
};

class PieceTrie {
 public:
  PieceTrie() = default;
  // Builds from `entries`; when a key repeats, the later entry wins (Hugging Face's rule).
  static PieceTrie Build(std::vector<TrieEntry> entries);

  const TrieNode* root() const { return nodes_; }
  const TrieNode& Child(const TrieNode& node, unsigned char byte) const { return nodes_[node.base + byte]; }
  size_t slot_count() const { return slot_count_; }
  size_t bytes() const { return buffer_.size(); }
  PageKind page_kind() const { return buffer_.kind(); }
  // Longest key length in bytes.
  size_t max_key_length() const { return max_key_length_; }

 private:
  HugePageBuffer buffer_;
  TrieNode* nodes_ = nullptr;
  size_t slot_count_ = 0;
  size_t max_key_length_ = 0;
};

}  // namespace stamen::tokenizer
