// Reading optional fields of tokenizer.json objects with simdjson's DOM, shared by the
// Unigram and WordPiece readers: a missing or mistyped field yields the given default.
#pragma once

#include <simdjson.h>

#include <string_view>

namespace stamen::tokenizer {

inline std::string_view StringOr(simdjson::dom::element parent, const char* key, std::string_view fallback) {
  std::string_view value;
  return parent[key].get(value) == simdjson::SUCCESS ? value : fallback;
}

inline bool BoolOr(simdjson::dom::element parent, const char* key, bool fallback) {
  bool value = false;
  return parent[key].get(value) == simdjson::SUCCESS ? value : fallback;
}

}  // namespace stamen::tokenizer
