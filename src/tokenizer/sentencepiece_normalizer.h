// SentencePiece's normalizer: the precompiled char map (longest rule wins), user-defined
// pieces kept verbatim, whitespace trimming/collapsing, and spaces escaped as U+2581.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/charsmap.h"
#include "tokenizer/offset_map.h"
#include "tokenizer/piece_trie.h"
#include "tokenizer/sentencepiece_model.h"

namespace stamen::tokenizer {

class SentencePieceNormalizer {
 public:
  // `user_defined` (may be null, must outlive this) holds the user-defined pieces, which
  // the normalizer copies through untouched.
  static StatusOr<SentencePieceNormalizer> Create(const SentencePieceModel& model,
                                                  const PieceTrie* user_defined);

  // Writes the normalized text and, per normalized byte, the offset of the input byte it
  // came from (when `offsets` is enabled); `offsets` gets one more entry for the end.
  void Normalize(std::string_view input, std::string* normalized, OffsetMap* offsets) const;

 private:
  // One normalization step at the start of `input`: the replacement and the input bytes
  // it consumes.
  std::pair<std::string_view, size_t> NormalizePrefix(std::string_view input) const;
  bool AsciiPassesThrough(char byte) const;

  // Per ASCII byte: true when the byte, followed by another ASCII byte or the end, is
  // copied unchanged (no user-defined piece or rule starts with it, except rules whose second
  // byte is non-ASCII). Most text then skips the trie walks.
  bool ascii_passes_through_[128] = {};

  Charsmap charsmap_;
  const PieceTrie* user_defined_ = nullptr;
  bool add_dummy_prefix_ = true;
  bool remove_extra_whitespaces_ = true;
  bool escape_whitespaces_ = true;
  bool whitespace_as_suffix_ = false;
};

}  // namespace stamen::tokenizer
