// What a WordPiece (BERT-family) tokenizer is made of, read from a Hugging Face
// `tokenizer.json` whose model is WordPiece, or from a `vocab.txt` with the
// `tokenizer_config.json` beside it (what transformers' BertTokenizerFast builds from them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/bert_normalizer.h"
#include "tokenizer/huggingface_config.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

struct WordPieceConfig {
  // BertNormalizer; a file without a normalizer gets every step off.
  BertNormalizerOptions normalizer;
  // BertPreTokenizer (true) or none at all: the whole text is one word.
  bool bert_pre_tokenizer = true;
  std::vector<std::pair<std::string, int32_t>> vocabulary;  // piece, id
  std::string unknown_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
  std::vector<AddedToken> added_tokens;
  PostProcessor post_processor;
  // WordPiece decoder; without one, Hugging Face joins pieces with spaces.
  bool decoder_is_wordpiece = false;
  std::string decoder_prefix = "##";
  bool decoder_cleanup = true;
  std::string format;  // Stats::format: "huggingface" or "vocab.txt"
};

// Parses a WordPiece tokenizer.json. Errors name the unsupported component or the bad key.
StatusOr<WordPieceConfig> ParseWordPieceJson(std::string_view json);

// Builds the configuration transformers' BertTokenizerFast derives from `vocab.txt` (one
// piece per line, id = line number) and `tokenizer_config.json` (may be empty: BERT's
// defaults, i.e. lowercase with accents stripped): BertNormalizer(clean_text, chinese
// characters, strip_accents, do_lower_case), BertPreTokenizer, `[CLS] A [SEP]` /
// `[CLS] A [SEP] B [SEP]` and the special tokens as added tokens.
StatusOr<WordPieceConfig> ParseWordPieceVocabulary(std::string_view vocab_txt, std::string_view tokenizer_config_json);

}  // namespace stamen::tokenizer
