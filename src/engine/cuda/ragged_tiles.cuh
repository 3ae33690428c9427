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

}  // namespace stamen::engine::cuda
