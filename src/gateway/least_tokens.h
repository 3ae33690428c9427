// A lower bound of the tokens a request's inputs make, counted from their bytes before they are
// tokenized: what admission control can refuse a body by under overload without spending the
// time to tokenize it (issue 45: a 429 within 100 ms, not after seconds of tokenization).
#pragma once

#include <cstdint>
#include <string_view>

#include "gateway/api.h"

namespace stamen::gateway {

// The text's whitespace-separated words, at most `max_length` (0: no limit). Every tokenizer
// stamen serves gives each word at least one token: WordPiece and byte-level BPE split at
// whitespace first, and SentencePiece's pieces never span a space. Text that is not split
// by ASCII whitespace (Chinese, Japanese) counts as one word per run, still a lower bound.
int64_t LeastTokens(std::string_view text, int64_t max_length);
// A text input as above; token ids count as themselves (also capped).
int64_t LeastInputTokens(const Input& input, int64_t max_length);

}  // namespace stamen::gateway
