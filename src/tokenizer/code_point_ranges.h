// A generated Unicode table of sorted, disjoint code point ranges [first, last], searched
// through an index of 256-code-point blocks: a lookup binary-searches only the ranges of its
// own block (one range for all of a CJK block, none for most symbol blocks) instead of all of
// them. The index is built at compile time; a lookup allocates nothing. `Range` is any struct
// with char32_t members `first` and `last` (grapheme.cc and word_character.cc add a property
// or nothing).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace stamen::tokenizer {

template <typename Range, size_t kCount>
class CodePointRanges {
 public:
  static_assert(kCount < UINT16_MAX, "the block index holds range numbers in 16 bits");

  constexpr explicit CodePointRanges(const Range (&ranges)[kCount]) : ranges_(ranges) {
    // first_range_[b] is the first range that ends at or after the start of block b.
    size_t range = 0;
    for (size_t block = 0; block <= kBlockCount; ++block) {
      while (range < kCount && ranges[range].last < (block << kBlockBits)) ++range;
      first_range_[block] = static_cast<uint16_t>(range);
    }
  }

  // The range that holds `code_point`, or null (also past U+10FFFF).
  const Range* Find(char32_t code_point) const {
    if (code_point > kMaxCodePoint) return nullptr;
    const size_t block = code_point >> kBlockBits;
    // Ranges before this block's first end too early; ranges after the next block's first
    // start too late. The candidate is the last range in between that starts at or before it.
    const Range* const begin = ranges_ + first_range_[block];
    const Range* const end = ranges_ + std::min<size_t>(first_range_[block + 1] + 1, kCount);
    const Range* range =
        std::upper_bound(begin, end, code_point, [](char32_t c, const Range& r) { return c < r.first; });
    if (range == begin) return nullptr;
    --range;
    return code_point <= range->last ? range : nullptr;
  }

 private:
  static constexpr int kBlockBits = 8;
  static constexpr char32_t kMaxCodePoint = 0x10FFFF;
  static constexpr size_t kBlockCount = (kMaxCodePoint >> kBlockBits) + 1;

  const Range* ranges_;
  std::array<uint16_t, kBlockCount + 1> first_range_{};
};

}  // namespace stamen::tokenizer
