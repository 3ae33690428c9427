// The Tokenizer for WordPiece (BERT-family) models: output identical to Hugging Face
// tokenizers' `encode(text, add_special_tokens)` for a tokenizer.json whose model is
// WordPiece, and to transformers' BertTokenizerFast for a vocab.txt folder.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

// From the bytes of a tokenizer.json whose model type is WordPiece (see TokenizerJsonModelType).
StatusOr<std::unique_ptr<Tokenizer>> LoadWordPieceTokenizer(std::string_view json);

// From vocab.txt bytes and tokenizer_config.json bytes ("" when there is none).
StatusOr<std::unique_ptr<Tokenizer>> LoadWordPieceVocabulary(std::string_view vocab_txt,
                                                             std::string_view tokenizer_config_json);

// From a vocab.txt file, with the tokenizer_config.json beside it when there is one.
// Errors name the file.
StatusOr<std::unique_ptr<Tokenizer>> LoadWordPieceVocabularyFile(const std::string& vocab_path);

}  // namespace stamen::tokenizer
