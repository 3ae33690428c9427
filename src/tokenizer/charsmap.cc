// Lookups in the darts-clone unit array: each 32-bit unit packs a label, a leaf flag and an
// XOR offset to its children (darts-clone's documented layout).
#include "tokenizer/charsmap.h"

#include <cstring>

namespace stamen::tokenizer {
namespace {

bool HasLeaf(uint32_t unit) { return (unit >> 8) & 1; }
uint32_t Value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t Label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

}  // namespace

StatusOr<Charsmap> Charsmap::Parse(std::string_view blob) {
  Charsmap charsmap;
  if (blob.empty()) return charsmap;
  if (blob.size() < 4) return Status::Error("precompiled_charsmap is shorter than its header");
  uint32_t trie_bytes = 0;
  std::memcpy(&trie_bytes, blob.data(), 4);
  if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4 || trie_bytes == 0) {
    return Status::Error("precompiled_charsmap has a bad trie size " + std::to_string(trie_bytes));
  }
  charsmap.units_.resize(trie_bytes / 4);
  std::memcpy(charsmap.units_.data(), blob.data() + 4, trie_bytes);
  charsmap.replacements_ = blob.substr(4 + trie_bytes);
  return charsmap;
}

template <typename OnMatch>
void Charsmap::ForEachPrefix(std::string_view text, bool stop_at_nul, OnMatch on_match) const {
  if (units_.empty()) return;
  size_t position = Offset(units_[0]);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == 0 && stop_at_nul) return;
    position ^= byte;
    if (position >= units_.size()) return;
    const uint32_t unit = units_[position];
    if (Label(unit) != byte) return;
    position ^= Offset(unit);
    if (position >= units_.size()) return;
    if (HasLeaf(unit) && !on_match(i + 1, Value(units_[position]))) return;
  }
}

bool Charsmap::HasKeyStartingWith(std::string_view prefix) const {
  if (units_.empty()) return false;
  size_t position = Offset(units_[0]);
  for (char c : prefix) {
    const auto byte = static_cast<unsigned char>(c);
    position ^= byte;
    if (position >= units_.size() || Label(units_[position]) != byte) return false;
    position ^= Offset(units_[position]);
  }
  return true;
}

std::string_view Charsmap::ReplacementAt(uint32_t value) const {
  if (value >= replacements_.size()) return {};
  const char* start = replacements_.data() + value;
  return std::string_view(start, strnlen(start, replacements_.size() - value));
}

size_t Charsmap::LongestMatch(std::string_view text, std::string_view* replacement) const {
  size_t longest = 0;
  uint32_t longest_value = 0;
  ForEachPrefix(text, /*stop_at_nul=*/false, [&](size_t length, uint32_t value) {
    longest = length;
    longest_value = value;
    return true;
  });
  if (longest > 0) *replacement = ReplacementAt(longest_value);
  return longest;
}

bool Charsmap::ShortestMatch(std::string_view text, std::string_view* replacement) const {
  bool found = false;
  ForEachPrefix(text, /*stop_at_nul=*/true, [&](size_t, uint32_t value) {
    *replacement = ReplacementAt(value);
    found = true;
    return false;
  });
  return found;
}

}  // namespace stamen::tokenizer
