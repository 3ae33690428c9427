// Builds the vocabulary's trie and lookup tables once at load time.
#include "tokenizer/unigram_vocabulary.h"

#include <cstdio>

namespace stamen::tokenizer {

StatusOr<UnigramVocabulary> UnigramVocabulary::Build(std::vector<VocabularyEntry> entries,
                                                     int32_t unknown_id, double unknown_score,
                                                     bool byte_fallback) {
  UnigramVocabulary vocabulary;
  if (unknown_id < 0 || static_cast<size_t>(unknown_id) >= entries.size()) {
    return Status::Error("unknown-piece id " + std::to_string(unknown_id) +
                         " is outside the vocabulary of " + std::to_string(entries.size()) + " pieces");
  }
  vocabulary.entries_ = std::move(entries);
  vocabulary.unknown_ = {unknown_id, unknown_score};
  vocabulary.byte_fallback_ = byte_fallback;

  std::vector<TrieEntry> trie_entries;
  trie_entries.reserve(vocabulary.entries_.size());
  vocabulary.ids_by_piece_.reserve(vocabulary.entries_.size());
  for (size_t id = 0; id < vocabulary.entries_.size(); ++id) {
    const VocabularyEntry& entry = vocabulary.entries_[id];
    // Later duplicates win, as in Hugging Face's token-to-id map.
    vocabulary.ids_by_piece_[entry.piece] = static_cast<int32_t>(id);
    trie_entries.push_back({entry.piece, entry.searchable ? static_cast<int32_t>(id) : -1, entry.score});
  }
  vocabulary.trie_ = PieceTrie::Build(std::move(trie_entries));
  if (vocabulary.trie_.root() == nullptr) return Status::Error("out of memory building the vocabulary trie");

  char name[8];
  for (int byte = 0; byte < 256; ++byte) {
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    vocabulary.byte_ids_[static_cast<size_t>(byte)] = vocabulary.PieceToId(name);
  }
  return vocabulary;
}

int32_t UnigramVocabulary::PieceToId(std::string_view piece) const {
  const auto found = ids_by_piece_.find(piece);
  return found == ids_by_piece_.end() ? -1 : found->second;
}

void UnigramVocabulary::AppendPieces(std::string_view text, const uint32_t* original_offsets,
                                     const std::vector<PieceSpan>& pieces, bool with_pieces,
                                     Encoding* out) const {
  auto emit = [&](int32_t id, std::string_view piece, uint32_t begin, uint32_t end) {
    out->ids.push_back(id);
    if (!with_pieces) return;
    out->pieces.emplace_back(piece);
    out->offsets.emplace_back(original_offsets[begin], original_offsets[end]);
  };
  for (const PieceSpan& piece : pieces) {
    const std::string_view surface = text.substr(piece.begin, piece.end - piece.begin);
    bool use_bytes = piece.id == unknown_.id && byte_fallback_;
    for (uint32_t i = piece.begin; i < piece.end && use_bytes; ++i) {
      use_bytes = byte_ids_[static_cast<unsigned char>(text[i])] >= 0;
    }
    if (!use_bytes) {
      emit(piece.id, surface, piece.begin, piece.end);
      continue;
    }
    for (uint32_t i = piece.begin; i < piece.end; ++i) {
      const int32_t id = byte_ids_[static_cast<unsigned char>(text[i])];
      emit(id, entries_[static_cast<size_t>(id)].piece, i, i + 1);
    }
  }
}

}  // namespace stamen::tokenizer
