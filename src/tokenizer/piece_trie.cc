// Builds the bitmap double array from sorted keys, breadth first so the hot top levels of
// the trie sit together at the start of the array.
#include "tokenizer/piece_trie.h"

#include <algorithm>
#include <cstring>
#include <deque>

namespace stamen::tokenizer {
namespace {

struct PendingNode {
  int32_t slot;
  uint32_t begin;  // range of sorted entries sharing this node's prefix
  uint32_t end;
  uint32_t depth;
};

// Tracks which slots are taken (a bitset) and finds a base at which all of a node's
// children fit, testing 64 candidate bases per step with word operations. Like darts-clone,
// it only searches the last kSearchWindow slots, which keeps building linear in the number
// of nodes (an unbounded search took minutes on a 250k-piece vocabulary) at a small cost in
// density.
class SlotAllocator {
 public:
  SlotAllocator() { MarkUsed(0); }  // slot 0 is the root

  int32_t Place(const std::vector<unsigned char>& labels) {
    while (first_free_ / 64 < words_.size() && words_[first_free_ / 64] == ~uint64_t{0}) {
      first_free_ = (first_free_ / 64 + 1) * 64;
    }
    const size_t window_start = slot_count_ > kSearchWindow ? slot_count_ - kSearchWindow : 0;
    const size_t lowest_slot = std::max(first_free_, window_start);
    size_t base = lowest_slot > labels.front() ? lowest_slot - labels.front() : 0;
    for (;; base += 64) {
      uint64_t candidates = ~uint64_t{0};  // bit i: base + i fits every label so far
      for (unsigned char label : labels) {
        candidates &= FreeWindow(base + label);
        if (candidates == 0) break;
      }
      if (candidates != 0) {
        base += static_cast<size_t>(__builtin_ctzll(candidates));
        break;
      }
    }
    for (unsigned char label : labels) MarkUsed(base + label);
    return static_cast<int32_t>(base);
  }
  size_t size() const { return slot_count_; }

 private:
  static constexpr size_t kSearchWindow = size_t{1} << 16;

  uint64_t Word(size_t index) const { return index < words_.size() ? words_[index] : 0; }
  // Bit i set when slot `position + i` is free.
  uint64_t FreeWindow(size_t position) const {
    const size_t word = position / 64;
    const unsigned shift = position % 64;
    uint64_t used = Word(word) >> shift;
    if (shift != 0) used |= Word(word + 1) << (64 - shift);
    return ~used;
  }
  void MarkUsed(size_t slot) {
    if (slot / 64 >= words_.size()) words_.resize(slot / 64 + 1, 0);
    words_[slot / 64] |= uint64_t{1} << (slot % 64);
    slot_count_ = std::max(slot_count_, slot + 1);
  }

  std::vector<uint64_t> words_;
  size_t slot_count_ = 0;
  size_t first_free_ = 0;
};

struct BuiltNode {
  uint64_t child_bits[4] = {0, 0, 0, 0};
  int32_t base = 0;
  int32_t token_id = -1;
  double score = 0;
};

}  // namespace

PieceTrie PieceTrie::Build(std::vector<TrieEntry> entries) {
  std::erase_if(entries, [](const TrieEntry& entry) { return entry.key.empty(); });
  std::stable_sort(entries.begin(), entries.end(),
                   [](const TrieEntry& a, const TrieEntry& b) { return a.key < b.key; });

  PieceTrie trie;
  std::vector<BuiltNode> built(1);
  SlotAllocator allocator;
  std::deque<PendingNode> queue{{0, 0, static_cast<uint32_t>(entries.size()), 0}};
  std::vector<unsigned char> labels;
  std::vector<std::pair<uint32_t, uint32_t>> child_ranges;
  while (!queue.empty()) {
    const PendingNode node = queue.front();
    queue.pop_front();
    uint32_t index = node.begin;
    // Keys ending exactly here sort first; the last of equal keys wins.
    while (index < node.end && entries[index].key.size() == node.depth) {
      built[node.slot].token_id = entries[index].token_id;
      built[node.slot].score = entries[index].score;
      trie.max_key_length_ = std::max<size_t>(trie.max_key_length_, node.depth);
      ++index;
    }
    labels.clear();
    child_ranges.clear();
    while (index < node.end) {
      const auto label = static_cast<unsigned char>(entries[index].key[node.depth]);
      const uint32_t range_begin = index;
      while (index < node.end && static_cast<unsigned char>(entries[index].key[node.depth]) == label) {
        ++index;
      }
      labels.push_back(label);
      child_ranges.emplace_back(range_begin, index);
    }
    if (labels.empty()) continue;
    const int32_t base = allocator.Place(labels);
    if (built.size() < allocator.size()) built.resize(allocator.size());
    built[node.slot].base = base;
    for (size_t i = 0; i < labels.size(); ++i) {
      built[node.slot].child_bits[labels[i] >> 6] |= uint64_t{1} << (labels[i] & 63);
      queue.push_back({base + labels[i], child_ranges[i].first, child_ranges[i].second, node.depth + 1});
    }
  }

  trie.slot_count_ = built.size();
  trie.buffer_ = HugePageBuffer::Allocate(built.size() * sizeof(TrieNode));
  trie.nodes_ = static_cast<TrieNode*>(trie.buffer_.data());
  for (size_t slot = 0; slot < built.size(); ++slot) {
    TrieNode& out = trie.nodes_[slot];
    std::memcpy(out.child_bits, built[slot].child_bits, sizeof(out.child_bits));
    out.base = built[slot].base;
    out.token_id = built[slot].token_id;
    out.score = built[slot].score;
  }
  return trie;
}

}  // namespace stamen::tokenizer
