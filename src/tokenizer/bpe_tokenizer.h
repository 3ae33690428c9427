// The Tokenizer for BPE models (GPT-2 / Qwen-family byte-level BPE, and character-level BPE
// with byte fallback): output identical to Hugging Face tokenizers' `encode(text,
// add_special_tokens)` for a tokenizer.json whose model is BPE, and to transformers'
// Qwen2TokenizerFast for a vocab.json + merges.txt folder.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

// From the bytes of a tokenizer.json whose model type is BPE.
StatusOr<std::unique_ptr<Tokenizer>> LoadBpeTokenizer(std::string_view json);

// From vocab.json, merges.txt and tokenizer_config.json bytes ("" when there is none).
StatusOr<std::unique_ptr<Tokenizer>> LoadBpeVocabulary(std::string_view vocab_json, std::string_view merges_txt,
                                                       std::string_view tokenizer_config_json);

// From a folder (or the path of its vocab.json or merges.txt) holding vocab.json and
// merges.txt, with the tokenizer_config.json beside them when there is one. Errors name the file.
StatusOr<std::unique_ptr<Tokenizer>> LoadBpeVocabularyFiles(const std::string& directory);

}  // namespace stamen::tokenizer
