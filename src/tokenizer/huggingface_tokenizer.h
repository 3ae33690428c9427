// The Tokenizer for a Hugging Face `tokenizer.json` with a Unigram model: output identical to
// Hugging Face tokenizers' `encode(text, add_special_tokens)`.
#pragma once

#include <memory>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

StatusOr<std::unique_ptr<Tokenizer>> LoadHuggingFaceTokenizer(std::string_view json);

struct HuggingFaceConfig;
// The same tokenizer from a configuration built in memory (e.g. converted from a `.model`).
StatusOr<std::unique_ptr<Tokenizer>> CreateHuggingFaceTokenizer(HuggingFaceConfig config);

}  // namespace stamen::tokenizer
