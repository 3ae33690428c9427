// A Unigram vocabulary: pieces with scores, their trie, the unknown piece and byte-fallback
// pieces. Shared by the SentencePiece and Hugging Face front ends, which differ in what they
// put into it (which pieces are searchable, user-defined scores).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/piece_trie.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/viterbi.h"

namespace stamen::tokenizer {

struct VocabularyEntry {
  std::string piece;
  double score = 0;       // score Viterbi adds for this piece
  bool searchable = true; // inserted into the trie as a piece
  bool special = false;   // control / added special token: dropped by Decode(skip special)
};

class UnigramVocabulary {
 public:
  // `unknown_id` must index `entries`; `unknown_score` is the score of an <unk> edge.
  static StatusOr<UnigramVocabulary> Build(std::vector<VocabularyEntry> entries, int32_t unknown_id,
                                           double unknown_score, bool byte_fallback);

  const PieceTrie& trie() const { return trie_; }
  UnknownPiece unknown() const { return unknown_; }
  size_t size() const { return entries_.size(); }
  const VocabularyEntry& entry(int32_t id) const { return entries_[static_cast<size_t>(id)]; }
  bool Contains(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < entries_.size(); }
  int32_t PieceToId(std::string_view piece) const;

  // Appends the ids of `pieces` of `text` to `out`. An <unk> piece becomes its bytes'
  // `<0xXX>` pieces when byte fallback is on and all of them exist, else the unknown id.
  // With `with_pieces`, also appends piece strings and offsets, mapping text byte i to
  // `original_offsets[i]` (which has text.size() + 1 entries).
  void AppendPieces(std::string_view text, const uint32_t* original_offsets,
                    const std::vector<PieceSpan>& pieces, bool with_pieces, Encoding* out) const;
  // Id of the `<0xXX>` piece for `byte`, or -1.
  int32_t ByteId(unsigned char byte) const { return byte_ids_[byte]; }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  std::vector<VocabularyEntry> entries_;
  std::unordered_map<std::string_view, int32_t> ids_by_piece_;
  PieceTrie trie_;
  UnknownPiece unknown_{0, 0};
  bool byte_fallback_ = false;
  std::array<int32_t, 256> byte_ids_{};
};

}  // namespace stamen::tokenizer
