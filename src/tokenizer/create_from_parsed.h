// The last step of every Load* function of a tokenizer format: the tokenizer built from the
// configuration (or model) its files parsed into, or the parse's error.
#pragma once

#include <memory>
#include <utility>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

// `create(parsed.value())` (a tokenizer class's static Create), or `parsed`'s error.
template <typename Parsed, typename Create>
StatusOr<std::unique_ptr<Tokenizer>> CreateFromParsed(StatusOr<Parsed> parsed, Create&& create) {
  if (!parsed.ok()) return parsed.status();
  return create(std::move(parsed).value());
}

}  // namespace stamen::tokenizer
