// The parts of a Hugging Face `tokenizer.json` that a Unigram tokenizer uses, read into
// plain structs. Anything the encoder cannot reproduce exactly is rejected by name.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/charsmap.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

// One alternative of a Replace regex: one character of a set, repeated greedily between
// `minimum_repeats` and `maximum_repeats` times, optionally anchored at the start (\A) or
// end (\z) of the text. Real tokenizer.json files use only such regexes: XLM-R's `" {2,}"`,
// DeBERTa-v3's `\s{2,}|[\n\r\t]` (transformers 5), `\A +| +\z`, `\A▁`, `\s+`.
struct ReplaceAlternative {
  std::vector<char32_t> characters;  // members of the set besides \s
  bool whitespace = false;           // \s (Oniguruma's, as tokenizers matches it) is in the set
  size_t minimum_repeats = 1;
  size_t maximum_repeats = 1;  // 0: unbounded
  bool at_start = false;
  bool at_end = false;
};

// Replace normalizer: every non-overlapping leftmost match of `pattern` (a String) or of the
// regex `alternatives` (tried in order at each position, the first that matches wins, as
// Oniguruma does) becomes `content`.
struct ReplaceRule {
  std::string pattern;  // empty for a regex
  std::vector<ReplaceAlternative> alternatives;
  std::string content;
};

struct NormalizerStep {
  enum class Kind { kPrecompiled, kReplace, kStrip, kPrepend, kNfc };
  Kind kind = Kind::kPrecompiled;
  Charsmap charsmap;
  // Precompiled: ASCII bytes that no one-byte rule changes (the normalizer's fast path).
  std::array<bool, 128> ascii_unchanged{};
  ReplaceRule replace;
  bool strip_left = false;
  bool strip_right = false;
  std::string prepend;
};

enum class PrependScheme { kAlways, kFirst, kNever };

struct MetaspaceConfig {
  std::string replacement = "\xE2\x96\x81";
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
};

struct PreTokenizerConfig {
  bool whitespace_split = false;  // WhitespaceSplit before Metaspace
  bool has_metaspace = false;
  MetaspaceConfig metaspace;
};

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

struct HuggingFaceConfig {
  std::vector<NormalizerStep> normalizers;
  PreTokenizerConfig pre_tokenizer;
  std::vector<AddedToken> added_tokens;
  PostProcessor post_processor;
  std::vector<std::pair<std::string, double>> vocabulary;
  int32_t unknown_id = -1;
  bool byte_fallback = false;
  bool decoder_is_metaspace = false;
  MetaspaceConfig decoder_metaspace;
};

// A Precompiled normalizer step over a SentencePiece precompiled charsmap (raw bytes, as a
// `.model` holds them; tokenizer.json holds them in base64).
StatusOr<NormalizerStep> PrecompiledNormalizerStep(std::string_view charsmap_blob);

// Parses `json`. Errors name the unsupported component or the malformed key.
StatusOr<HuggingFaceConfig> ParseHuggingFaceConfig(std::string_view json);

}  // namespace stamen::tokenizer
