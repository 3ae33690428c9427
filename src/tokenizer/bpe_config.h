// What a BPE tokenizer is made of, read from a Hugging Face `tokenizer.json` whose model is
// BPE, or from a `vocab.json` + `merges.txt` pair with Qwen2's settings (what transformers'
// Qwen2TokenizerFast builds from them), plus `tokenizer_config.json` for added tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/bpe_text.h"
#include "tokenizer/huggingface_config.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

// Split on a literal string (Gemma's `Split(" ", MergedWithPrevious)`), as Hugging Face's Split
// pre-tokenizer does with a String pattern: each match is a delimiter that `behavior` keeps
// as its own word, merges into the word before or after, or drops.
struct LiteralSplit {
  enum class Behavior { kIsolated, kMergedWithPrevious, kMergedWithNext, kRemoved };
  std::string pattern;  // not empty
  Behavior behavior = Behavior::kIsolated;
};

struct BpeConfig {
  // Normalizer: NFC, or Hugging Face steps (Replace, Strip, Prepend, Precompiled; Gemma's
  // Replace(" " → "▁")), or none. The two kinds together are refused.
  bool nfc = false;
  std::vector<NormalizerStep> normalizers;
  // Pre-tokenizer: an optional Split (a regex pattern the scanner knows, Isolated; or a literal
  // string), then an optional ByteLevel.
  std::optional<bpe::SplitPattern> split;
  std::optional<LiteralSplit> literal_split;
  bool byte_level = false;
  bool byte_level_add_prefix_space = false;
  bool byte_level_use_regex = false;  // ByteLevel's own GPT-2 split
  // Model.
  std::vector<std::pair<std::string, int32_t>> vocabulary;  // piece, id
  std::vector<std::pair<std::string, std::string>> merges;  // by rank
  std::optional<std::string> unknown_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unknown = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::vector<AddedToken> added_tokens;
  PostProcessor post_processor;
  bool decoder_is_byte_level = false;  // else, without the steps below, pieces are joined with spaces
  // Gemma's decoder, Sequence[Replace(a → b)…, ByteFallback, Fuse]: the Replace steps on each
  // piece, runs of <0xXX> pieces turned into their bytes, all concatenated.
  std::vector<std::pair<std::string, std::string>> decoder_replacements;
  bool decoder_byte_fallback = false;
  bool decoder_fuse = false;
  std::string format;  // Stats::format: "huggingface" or "vocab.json"
};

// Parses a BPE tokenizer.json. Errors name the unsupported component or the bad key.
StatusOr<BpeConfig> ParseBpeJson(std::string_view json);

// Qwen2's configuration over `vocab_json` (piece → id), `merges_txt` (one "a b" merge per
// line after an optional `#version` line) and `tokenizer_config_json` (may be empty): NFC,
// Split on the Qwen2 pattern (Isolated), ByteLevel without prefix space or regex, no unknown
// token, ByteLevel decoder, the added tokens of `added_tokens_decoder`, no template.
StatusOr<BpeConfig> ParseBpeVocabularyFiles(std::string_view vocab_json, std::string_view merges_txt,
                                            std::string_view tokenizer_config_json);

}  // namespace stamen::tokenizer
