// The lookup of a generated two-stage table of per-code-point flags (bert_tables.inc,
// bpe_tables.inc): the code points go in blocks of 2^kShift, each distinct block of flags is
// stored once, and an index maps every block to its copy. Both tables' generators write this
// layout, so the BERT normalizer and the BPE scanner read them through the same two functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace stamen::tokenizer {

// The flags of `c` (at most U+10FFFF): blocks[(index[c >> kShift] << kShift) | (c mod 2^kShift)].
template <int kShift, typename IndexElement, size_t kIndexSize, size_t kBlocksSize>
constexpr uint8_t BlockFlags(const IndexElement (&index)[kIndexSize], const uint8_t (&blocks)[kBlocksSize], char32_t c) {
  return blocks[(static_cast<size_t>(index[c >> kShift]) << kShift) | (c & ((1u << kShift) - 1))];
}

// The flags of the 128 ASCII code points, read without the index by the loops that take one
// byte at a time.
template <uint8_t (*kFlags)(char32_t)>
constexpr std::array<uint8_t, 128> AsciiFlagTable() {
  std::array<uint8_t, 128> flags{};
  for (char32_t c = 0; c < 128; ++c) flags[c] = kFlags(c);
  return flags;
}

}  // namespace stamen::tokenizer
