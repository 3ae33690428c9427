// The working memory behind `Scratch`: every buffer an encode needs, kept between calls so
// that steady-state encodes allocate nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/offset_map.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/viterbi.h"

namespace stamen::tokenizer {

// A run of the input: a piece of text to normalize, or an added token matched verbatim.
struct TextSegment {
  uint32_t begin;
  uint32_t end;
  int32_t added_token;  // index into the added tokens, or -1 for text
};

// A pre-token: bytes [begin, end) of `words`, segmented on its own; or a special id.
struct Word {
  uint32_t begin;
  uint32_t end;
  int32_t special_id;  // -1 for text
};

// BertNormalizer, when tracking offsets: one mark of the current NFD reordering run.
struct CombiningMark {
  uint32_t origin_begin;  // the input character it came from
  uint32_t origin_end;
  uint8_t combining_class;
  uint8_t length;  // its UTF-8 bytes in the output; 0 when strip_accents drops it
  bool head;       // the first character of its input character's decomposition
};

// BPE: one symbol of a word being merged (the linked list of the long-word path).
struct BpeSymbol {
  int32_t id;
  uint32_t length;  // bytes of the word it covers
  int32_t prev;
  int32_t next;
};

// BPE: a candidate merge of the symbol at `position` with the next one (the heap entries).
struct BpeCandidate {
  int32_t rank;
  int32_t position;
  int32_t new_id;
};

struct Scratch::Buffers {
  std::string valid_text;  // the input with invalid UTF-8 replaced, when it had any
  std::vector<uint32_t> valid_text_origins;  // input offset of each byte of valid_text
  std::string normalized;
  OffsetMap offsets;  // input offset of each normalized byte
  // WordPiece: the input [begin, end) of the character behind each normalized byte.
  std::vector<uint32_t> normalized_begins;
  std::vector<uint32_t> normalized_ends;
  std::vector<CombiningMark> combining_marks;
  std::string work;
  OffsetMap work_offsets;
  std::string words;
  OffsetMap word_offsets;
  std::vector<TextSegment> segments;
  std::vector<Word> word_list;
  std::vector<ViterbiCell<float>> float_cells;
  std::vector<ViterbiCell<double>> double_cells;
  std::vector<PieceSpan> pieces;
  // BPE: the word's symbols and candidate merges, and the word as the vocabulary spells it.
  std::vector<int32_t> bpe_ids;
  std::vector<uint32_t> bpe_lengths;
  std::vector<int32_t> bpe_ranks;
  std::vector<int32_t> bpe_new_ids;
  std::vector<BpeSymbol> bpe_symbols;
  std::vector<BpeCandidate> bpe_heap;
  std::vector<char32_t> bpe_points;
  std::string bpe_piece;
  std::vector<Word> bpe_words;
  Encoding first;
  Encoding second;
};

}  // namespace stamen::tokenizer
