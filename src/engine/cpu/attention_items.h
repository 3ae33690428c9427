// The work items of the CPU attention kernels (attention.cc, amx_attention.cc): one per
// (sequence, key/value head, block of queries). Items are independent, so threads split them;
// the queries are split into blocks only when there are too few (sequence, key/value head)
// pairs to go round the threads (EmbeddingGemma has one key/value head, so at batch 1 its
// attention ran on one thread), and each block packs the sequence's keys and values again
// (O(length · d) against its O(block · length · d) products).
#pragma once

#include <algorithm>
#include <cstdint>

namespace stamen::engine::cpu {

struct AttentionItem {
  int64_t sequence;
  int64_t kv_head;
  int64_t begin;        // the sequence's first row
  int64_t length;       // its tokens
  int64_t first_query;  // this item's queries, [first_query, end_query) of the sequence, in
  int64_t end_query;    // whole tiles of queries (empty when the sequence has too few)
};

// Blocks of queries per (sequence, key/value head) pair for `threads` threads.
inline int64_t QueryBlocks(int64_t pairs, int threads, bool may_split) {
  return may_split && pairs < 2 * threads ? (2 * threads + pairs - 1) / pairs : 1;
}

// Item `item` of pairs × query_blocks, its queries in tiles of `tile` rows.
inline AttentionItem ItemOf(int64_t item, int64_t query_blocks, int64_t kv_heads, const int32_t* bounds, int64_t tile) {
  AttentionItem found;
  found.sequence = item / query_blocks / kv_heads;
  found.kv_head = item / query_blocks % kv_heads;
  const int64_t block = item % query_blocks;
  found.begin = bounds[found.sequence];
  found.length = bounds[found.sequence + 1] - found.begin;
  const int64_t tiles = (found.length + tile - 1) / tile;
  found.first_query = tiles * block / query_blocks * tile;
  found.end_query = std::min(found.length, tiles * (block + 1) / query_blocks * tile);
  return found;
}

}  // namespace stamen::engine::cpu
