// Which (sequence, query tile) a block of a ragged attention kernel owns. Both attention
// kernels launch a grid that depends only on the token capacity and the sequence count
// (ceil(T / block_rows) + S blocks per head, an upper bound on the tiles), so that a captured
// graph replays correctly for any batch of the same (S, T bucket); block b takes the b-th tile
// in sequence order, and surplus blocks find none.
//
// Included after common.cuh by the .cu files and after cuda_shim.h by the host emulation
// (tests/cuda/host_emulation), so it includes nothing itself.
#pragma once

namespace stamen::engine::cuda {

// Run by all 32 lanes of one warp: a warp-wide scan over the sequences' tile counts
// (ceil(length / block_rows) each; empty sequences have none). Sets `sequence` and `index`
// (the tile within the sequence) for block `target`, or `sequence` to -1 when the block has
// no tile. The caller puts both in shared memory and synchronises before reading them.
__device__ __forceinline__ void FindQueryTile(const int32_t* cu_seqlens, int sequences, int block_rows, int target,
                                              int& sequence, int& index) {
  const int lane = threadIdx.x % 32;
  if (lane == 0) sequence = -1;
  __syncwarp();
  int before = 0;
  for (int base = 0; base < sequences; base += 32) {
    const int s = base + lane;
    const int tiles = s < sequences ? (cu_seqlens[s + 1] - cu_seqlens[s] + block_rows - 1) / block_rows : 0;
    int inclusive = tiles;
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
      const int other = __shfl_up_sync(0xffffffffu, inclusive, offset);
      if (lane >= offset) inclusive += other;
    }
    const int exclusive = inclusive - tiles;
    const bool hit = tiles > 0 && target >= before + exclusive && target < before + inclusive;
    const unsigned int ballot = __ballot_sync(0xffffffffu, hit);
    if (ballot != 0) {
      if (hit) {
        sequence = s;
        index = target - before - exclusive;
      }
      return;
    }
    before += __shfl_sync(0xffffffffu, inclusive, 31);
  }
}

// Where a block's tile lies: its head's columns in the packed qkv rows ([q heads | k heads |
// v heads] · head_dim; grouped-query heads share a kv head), its queries, and the keys any of them
// sees (causal: none past its last query; with a window, none further than window − 1 before its
// first query or after its last).
struct QueryTile {
  int64_t row_size, q_column, k_column, v_column;
  int q_begin, q_rows, kv_begin, kv_end;
};

__device__ __forceinline__ QueryTile LocateQueryTile(const int32_t* cu_seqlens, int sequence, int index,
                                                     int block_rows, int head, int num_heads, int num_kv_heads,
                                                     int head_dim, bool causal, int window) {
  QueryTile tile;
  const int kv_head = head / (num_heads / num_kv_heads);
  tile.row_size = int64_t{num_heads + 2 * num_kv_heads} * head_dim;
  tile.q_column = int64_t{head} * head_dim;
  tile.k_column = int64_t{num_heads + kv_head} * head_dim;
  tile.v_column = int64_t{num_heads + num_kv_heads + kv_head} * head_dim;
  const int sequence_begin = cu_seqlens[sequence];
  const int sequence_end = cu_seqlens[sequence + 1];
  tile.q_begin = sequence_begin + index * block_rows;
  tile.q_rows = min(block_rows, sequence_end - tile.q_begin);
  tile.kv_begin = sequence_begin;
  tile.kv_end = causal ? tile.q_begin + tile.q_rows : sequence_end;
  if (window > 0) {
    tile.kv_begin = max(sequence_begin, tile.q_begin - window + 1);
    tile.kv_end = min(tile.kv_end, tile.q_begin + tile.q_rows - 1 + window);
  }
  return tile;
}

}  // namespace stamen::engine::cuda
