// DeBERTa-v2/v3 folders that ship `spm.model` (+ tokenizer_config.json, special_tokens_map.json,
// added_tokens.json) and no tokenizer.json: the tokenizer transformers' DebertaV2TokenizerFast
// converts them into (DebertaV2Converter), which the slow, sentencepiece-based DebertaV2Tokenizer
// agrees with but for whitespace left beside a literal "[UNK]" or a zero-width character and
// its own longest_first truncation (tests/tokenizer/data/README.md has the figures).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/huggingface_config.h"
#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

// The files of the folder, as bytes; all but `model` may be empty (absent).
struct DebertaV2Files {
  std::string_view model;               // spm.model, a serialized SentencePiece ModelProto (Unigram)
  std::string_view tokenizer_config;    // tokenizer_config.json
  std::string_view special_tokens_map;  // special_tokens_map.json
  std::string_view added_tokens;        // added_tokens.json
};

// What DebertaV2Converter builds: the spm pieces as a Unigram vocabulary with their own ids,
// Strip + the model's precompiled charsmap + Replace(" {2,}" → " ") normalizers, Metaspace
// (prepend always), the spm control pieces and the named special tokens as added tokens
// ([MASK] after the vocabulary unless a file gives its id), and `[CLS] A [SEP]` /
// `[CLS] A [SEP] B [SEP]` with type ids 0 / 1. `do_lower_case` or `split_by_punct` true are
// refused by name. Errors name the file and what is wrong.
StatusOr<HuggingFaceConfig> ConvertDebertaV2SentencePiece(const DebertaV2Files& files);

// Reads `path` (spm.model, or the folder holding it) and the JSON files beside it.
StatusOr<std::unique_ptr<Tokenizer>> LoadDebertaV2SentencePieceFiles(const std::string& path);

}  // namespace stamen::tokenizer
