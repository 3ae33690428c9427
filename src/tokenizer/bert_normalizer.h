// Hugging Face's BertNormalizer and BertPreTokenizer, character for character as tokenizers
// 0.23.3 runs them (its Unicode tables, not the current standard's: see bert_tables.inc).
//
// BertNormalizer, in this order:
//   clean_text            drop U+0000, U+FFFD and "other" characters except \t \n \r
//                         (unicode_categories' Cc/Cf/Co/Cs; unassigned code points stay);
//                         whitespace becomes ' '
//   handle_chinese_chars  ' ' before and after each CJK ideograph (HF's eight ranges)
//   strip_accents         NFD, then drop the Mn characters (unicode_categories' table)
//   lowercase             Rust's char::to_lowercase, one character at a time
// BertPreTokenizer: split on whitespace (dropped), then isolate each punctuation character
// (ASCII punctuation and unicode_categories' P*).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/scratch_buffers.h"

namespace stamen::tokenizer {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;  // a file's `null` means "as lowercase"; resolved by the loader
  bool lowercase = true;
};

// Where each normalized byte came from: the input [begin, end) of its character, as Hugging
// Face's alignments give it (by position after NFD's reordering, like theirs).
struct BertOffsets {
  std::vector<uint32_t>* begins;      // appended to, one entry per output byte
  std::vector<uint32_t>* ends;
  std::vector<CombiningMark>* marks;  // scratch
};

class BertNormalizer {
 public:
  explicit BertNormalizer(BertNormalizerOptions options = {});

  // Appends the normalization of text[begin, end) (valid UTF-8) to `out`, and with
  // `offsets` the origin of each output byte, in `text` coordinates.
  void Normalize(std::string_view text, uint32_t begin, uint32_t end, std::string* out,
                 const BertOffsets* offsets) const;

  const BertNormalizerOptions& options() const { return options_; }

 private:
  struct Origin {
    uint32_t begin;
    uint32_t end;
  };
  struct Output;
  void AppendCharacter(char32_t c, Origin origin, Output* output) const;
  // One character of NFD's output (`head`: the first of its input character's).
  void AppendElement(char32_t c, uint8_t flags, Origin origin, bool head, Output* output) const;
  void AppendMark(char32_t c, uint8_t flags, Origin origin, bool head, Output* output) const;
  void AppendLowered(char32_t c, uint8_t flags, Origin origin, Output* output) const;
  static void FlushRun(Output* output);

  BertNormalizerOptions options_;
  int16_t ascii_[128];  // what an ASCII byte becomes: a byte, or -1 when dropped
};

// Appends the BertPreTokenizer words of text[begin, end) to `words` (special_id -1).
void BertPreTokenize(std::string_view text, uint32_t begin, uint32_t end, std::vector<Word>* words);

// Whether tokenizers' BertPreTokenizer isolates `c` / splits on it.
bool IsBertPunctuation(char32_t c);
bool IsBertWhitespace(char32_t c);

}  // namespace stamen::tokenizer
