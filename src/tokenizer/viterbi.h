// Unigram segmentation: the most probable split of a normalized byte range into pieces,
// by Viterbi over byte positions with the trie walked from each character start.
//
// best[end] = max over pieces p ending at `end` of best[start(p)] + score(p). A character
// that starts no one-character piece gets an <unk> edge scored min_score - 10, so every
// input has a path. Ties keep the first candidate found, i.e. the one starting earliest;
// both references share that order.
//
// The two references differ only in arithmetic, which `StoredScore` selects:
//  - SentencePiece keeps best[] in float, but adds a piece score in double and compares
//    that double with the stored float (its piece score expression has type double);
//    unknown-character edges are added and compared in float.
//  - Hugging Face keeps and adds everything in double.
// On inputs of thousands of tokens these pick different splits, so each mode reproduces its
// reference exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "tokenizer/piece_trie.h"
#include "tokenizer/utf8.h"

namespace stamen::tokenizer {

// A piece of the segmentation: bytes [begin, end) of the normalized text.
struct PieceSpan {
  uint32_t begin;
  uint32_t end;
  int32_t id;
};

template <typename StoredScore>
struct ViterbiCell {
  StoredScore score;  // -infinity while unreached, so any real path replaces it
  int32_t start;      // where the best piece ending here starts
  int32_t id;
};

struct UnknownPiece {
  int32_t id;
  double score;  // min_score - 10 (SentencePiece's kUnkPenalty)
};

// Appends the best segmentation of text[begin, end) to `pieces`, fusing runs of unknown
// characters into one <unk> piece as both references do. `cells` is caller scratch.
template <typename StoredScore>
void SegmentViterbi(const PieceTrie& trie, std::string_view text, uint32_t begin, uint32_t end,
                    UnknownPiece unknown, std::vector<ViterbiCell<StoredScore>>& cells,
                    std::vector<PieceSpan>* pieces) {
  if (begin >= end) return;
  const uint32_t length = end - begin;
  if (cells.size() < length + 1) cells.resize(length + 1);
  ViterbiCell<StoredScore>* best = cells.data();
  best[0] = {0, 0, -1};
  for (uint32_t i = 1; i <= length; ++i) best[i].score = -std::numeric_limits<StoredScore>::infinity();

  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data()) + begin;
  const TrieNode* root = trie.root();
  const auto unknown_score = static_cast<StoredScore>(unknown.score);
  uint32_t start = 0;
  while (start < length) {
    const uint32_t char_length =
        std::min<uint32_t>(static_cast<uint32_t>(utf8::LengthFromLeadByte(bytes[start])), length - start);
    const StoredScore score_here = best[start].score;
    const double score_here_wide = score_here;
    bool has_single_character_piece = false;
    const TrieNode* node = root;
    for (uint32_t position = start; position < length; ++position) {
      const unsigned char byte = bytes[position];
      if (!node->HasChild(byte)) break;
      node = &trie.Child(*node, byte);
      if (node->token_id < 0) continue;
      const double candidate = node->score + score_here_wide;
      ViterbiCell<StoredScore>& cell = best[position + 1];
      if (candidate > static_cast<double>(cell.score)) {
        cell.score = static_cast<StoredScore>(candidate);
        cell.start = static_cast<int32_t>(start);
        cell.id = node->token_id;
      }
      has_single_character_piece |= (position + 1 - start == char_length);
    }
    if (!has_single_character_piece) {
      const StoredScore candidate = unknown_score + score_here;
      ViterbiCell<StoredScore>& cell = best[start + char_length];
      if (candidate > cell.score) {
        cell.score = candidate;
        cell.start = static_cast<int32_t>(start);
        cell.id = unknown.id;
      }
    }
    start += char_length;
  }

  // Backtrack from the end, then put this range's pieces in text order.
  const size_t first_new = pieces->size();
  for (uint32_t position = length; position > 0;) {
    const ViterbiCell<StoredScore>& cell = best[position];
    const auto piece_start = static_cast<uint32_t>(cell.start);
    if (cell.id == unknown.id && pieces->size() > first_new && pieces->back().id == unknown.id) {
      pieces->back().begin = begin + piece_start;  // fuse with the <unk> after it
    } else {
      pieces->push_back({begin + piece_start, begin + position, cell.id});
    }
    position = piece_start;
  }
  std::reverse(pieces->begin() + static_cast<std::ptrdiff_t>(first_new), pieces->end());
}

}  // namespace stamen::tokenizer
