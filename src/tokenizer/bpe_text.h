// Text steps of the byte-level BPE path, as Hugging Face tokenizers 0.23.3 runs them:
//   * NFC (the crate unicode-normalization-alignments 0.1.12 that tokenizers links), with a
//     quick check so that text without a character NFC could change is not copied;
//   * the Split pre-tokenizer for the GPT-2 and Qwen2 (and cl100k / Llama-3) regex patterns,
//     as a hand-written scanner that reproduces Oniguruma's leftmost-first matching of them.
// The character classes (\p{L}, \p{N}, \s, case folding) and the NFC data come from
// bpe_tables.inc, probed from tokenizers itself by tools/generate_bpe_tables.py.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/offset_map.h"
#include "tokenizer/scratch_buffers.h"

namespace stamen::tokenizer::bpe {

// The regex patterns the scanner reproduces exactly.
enum class SplitPattern {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  // (GPT-2; also what ByteLevel's use_regex applies)
  kGpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  // (Qwen2, Qwen3)
  kQwen2,
  // The same with \p{N}{1,3} (cl100k, Llama 3).
  kCl100k,
};

// The pattern a Split regex string is, or false when the scanner does not know it.
bool RecognizeSplitPattern(std::string_view regex, SplitPattern* pattern);
// The regex text of `pattern` (for messages and tests).
std::string_view SplitPatternText(SplitPattern pattern);

// Appends the matches of `pattern` in text[begin, end) (valid UTF-8) to `words`, as
// `Split(pattern, behavior=Isolated)` does: every byte lies in exactly one word, since every
// character starts some alternative of these patterns.
void SplitWords(std::string_view text, uint32_t begin, uint32_t end, SplitPattern pattern, std::vector<Word>* words);

// Whether Oniguruma's \s, as tokenizers compiles its regexes, matches `c` (also what the
// Replace normalizer's regexes use).
bool IsRegexSpace(char32_t c);

// True when NFC leaves text (valid UTF-8) unchanged for sure: no character in it may change
// or compose with the one before.
bool IsNfcQuick(std::string_view text);

// Appends NFC(text) (valid UTF-8) to `out`; with `offsets` enabled, the input offset of each
// output byte (`base` + position in text; a recomposed run maps to its first character).
// `points` is scratch.
void AppendNfc(std::string_view text, uint32_t base, std::string* out, OffsetMap* offsets,
               std::vector<char32_t>* points);

}  // namespace stamen::tokenizer::bpe
