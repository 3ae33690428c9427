// Truncation and special-token templates (`<s> A </s>`, `<s> A </s></s> B </s>`): turns the
// content ids of one text or a pair into the model input, as Hugging Face's
// TemplateProcessing / RobertaProcessing / BertProcessing do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

struct TemplateItem {
  bool is_sequence = false;
  int sequence = 0;                  // 0 = A (first text), 1 = B (second text)
  std::vector<int32_t> special_ids;  // when !is_sequence
  std::vector<std::string> special_pieces;
  uint8_t type_id = 0;

  // One special token of a template, and the place of text A (0) or B (1).
  static TemplateItem Special(std::string piece, int32_t id, uint8_t type_id) {
    TemplateItem item;
    item.special_ids = {id};
    item.special_pieces = {std::move(piece)};
    item.type_id = type_id;
    return item;
  }
  static TemplateItem Sequence(int sequence, uint8_t type_id) {
    TemplateItem item;
    item.is_sequence = true;
    item.sequence = sequence;
    item.type_id = type_id;
    return item;
  }
};

struct PostProcessor {
  std::vector<TemplateItem> single;  // empty = the text alone
  std::vector<TemplateItem> pair;    // empty = first then second

  size_t SpecialCount(bool is_pair) const;
  // Builds `out` from content encodings `first` and (for pairs) `second`, truncating content
  // to `options.max_length` minus the special tokens (longest-first for pairs, as Hugging
  // Face does). `first`/`second` are consumed.
  void Assemble(Encoding* first, Encoding* second, const EncodeOptions& options, Encoding* out) const;
};

// Keeps `length` ids of `encoding`, cutting on `side`.
void TruncateEncoding(Encoding* encoding, size_t length, TruncationSide side);

}  // namespace stamen::tokenizer
