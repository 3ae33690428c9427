// The range table behind IsWordCharacter for non-ASCII code points.
#include "tokenizer/word_character.h"

#include "tokenizer/code_point_ranges.h"

namespace stamen::tokenizer::word_character_internal {
namespace {

struct WordCharacterRange {
  char32_t first;
  char32_t last;
};

#include "tokenizer/word_character_tables.inc"

constexpr CodePointRanges kWordCharacterIndex(kWordCharacterRanges);

}  // namespace

bool IsWordCharacterSlow(char32_t code_point) { return kWordCharacterIndex.Find(code_point) != nullptr; }

}  // namespace stamen::tokenizer::word_character_internal
