// The Tokenizer for a SentencePiece `.model` (Unigram): output identical to SentencePiece's
// `Encode` — its own ids, no BOS/EOS (SentencePiece adds none unless asked).
#pragma once

#include <memory>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

StatusOr<std::unique_ptr<Tokenizer>> LoadSentencePieceTokenizer(std::string_view model_bytes);

}  // namespace stamen::tokenizer
