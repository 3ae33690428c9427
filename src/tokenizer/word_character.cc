// Range table lookup behind IsWordCharacter for non-ASCII code points.
#include "tokenizer/word_character.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace stamen::tokenizer::word_character_internal {
namespace {

struct WordCharacterRange {
  char32_t first;
  char32_t last;
};

#include "tokenizer/word_character_tables.inc"

constexpr size_t kRangeCount = std::size(kWordCharacterRanges);
constexpr int kBlockBits = 8;
constexpr char32_t kMaxCodePoint = 0x10FFFF;
constexpr size_t kBlockCount = (kMaxCodePoint >> kBlockBits) + 1;

// kFirstRangeOfBlock[b] is the first range that ends at or after the start of block b, so a
// lookup searches only the ranges of its own 256 code points (one range for all of a CJK
// block, none for most symbol blocks) instead of all of them.
constexpr auto kFirstRangeOfBlock = [] {
  std::array<uint16_t, kBlockCount + 1> first_range{};
  size_t range = 0;
  for (size_t block = 0; block <= kBlockCount; ++block) {
    while (range < kRangeCount && kWordCharacterRanges[range].last < (block << kBlockBits)) ++range;
    first_range[block] = static_cast<uint16_t>(range);
  }
  return first_range;
}();
static_assert(kRangeCount < UINT16_MAX);

}  // namespace

bool IsWordCharacterSlow(char32_t code_point) {
  if (code_point > kMaxCodePoint) return false;
  const size_t block = code_point >> kBlockBits;
  // Ranges before this block's first end too early; ranges after the next block's first
  // start too late. The candidate is the last range in between that starts at or before it.
  const WordCharacterRange* const begin = kWordCharacterRanges + kFirstRangeOfBlock[block];
  const WordCharacterRange* const end =
      kWordCharacterRanges + std::min<size_t>(kFirstRangeOfBlock[block + 1] + 1, kRangeCount);
  const WordCharacterRange* range = std::upper_bound(
      begin, end, code_point, [](char32_t c, const WordCharacterRange& r) { return c < r.first; });
  if (range == begin) return false;
  --range;
  return code_point <= range->last;
}

}  // namespace stamen::tokenizer::word_character_internal
