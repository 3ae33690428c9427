// Ragged attention: sequences concatenated along the token axis, boundaries in cu_seqlens,
// no padding computed. FlashAttention-style: each block owns a tile of up to kBlockM queries
// of one sequence and one head, streams that sequence's keys and values through shared memory
// in tiles of kBlockN, and keeps a running max and sum per query (online softmax), so the
// score matrix never exists in global memory. bf16 in and out, fp32 inside.
//
// The grid depends only on the token capacity and the sequence count (an upper bound on the
// number of tiles, ceil(T / kBlockM) + S), never on the lengths, so a captured graph replays
// correctly for any batch with the same (S, T bucket); surplus blocks exit at once.
//
// This is the portable scalar-FMA version (no tensor-core MMA): correct for any even head_dim
// up to 256, grouped-query heads, causal masks and sliding windows (ops::AttentionOptions).
// MPNet's relative position bias is not implemented here yet. A tensor-core version is future
// work that needs a GPU to tune.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "engine/cuda/common.cuh"
#include "engine/cuda/kernels.h"

namespace stamen::engine::cuda {
namespace {

constexpr int kBlockM = 32;   // queries per block
constexpr int kBlockN = 64;   // keys per shared-memory tile
constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;
constexpr int kMaxAccumulators = (kBlockM * kMaxHeadDim + kThreads - 1) / kThreads;

struct SharedLayout {
  int q_stride;  // floats per query row
  int k_stride;  // bf16 per key row (padded so lanes reading different keys hit different banks)
  int v_stride;  // bf16 per value row
  size_t q_offset, k_offset, v_offset, s_offset, stats_offset, bytes;
};

__host__ __device__ inline SharedLayout MakeLayout(int head_dim) {
  SharedLayout layout{};
  layout.q_stride = head_dim + 1;
  layout.k_stride = head_dim + 2;
  layout.v_stride = head_dim;
  layout.q_offset = 0;
  layout.k_offset = layout.q_offset + sizeof(float) * kBlockM * layout.q_stride;
  layout.v_offset = layout.k_offset + sizeof(bf16) * kBlockN * layout.k_stride;
  layout.s_offset = (layout.v_offset + sizeof(bf16) * kBlockN * layout.v_stride + 15) / 16 * 16;
  layout.stats_offset = layout.s_offset + sizeof(float) * kBlockM * (kBlockN + 1);
  layout.bytes = layout.stats_offset + sizeof(float) * 3 * kBlockM;
  return layout;
}

__global__ void __launch_bounds__(kThreads)
    RaggedAttentionKernel(const bf16* __restrict__ qkv, const int32_t* __restrict__ cu_seqlens, int sequences,
                          int num_heads, int num_kv_heads, int head_dim, float scale, bool causal,
                          int window, bf16* __restrict__ output) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ int tile_sequence;
  __shared__ int tile_index;
  const SharedLayout layout = MakeLayout(head_dim);
  float* q_tile = reinterpret_cast<float*>(shared + layout.q_offset);
  bf16* k_tile = reinterpret_cast<bf16*>(shared + layout.k_offset);
  bf16* v_tile = reinterpret_cast<bf16*>(shared + layout.v_offset);
  float* scores = reinterpret_cast<float*>(shared + layout.s_offset);
  float* row_max = reinterpret_cast<float*>(shared + layout.stats_offset);
  float* row_sum = row_max + kBlockM;
  float* row_alpha = row_sum + kBlockM;
  const int s_stride = kBlockN + 1;

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;

  // Which (sequence, query tile) this block owns: a warp-wide scan over the tile counts.
  if (warp == 0) {
    if (lane == 0) tile_sequence = -1;
    __syncwarp();
    const int target = blockIdx.x;
    int before = 0;
    for (int base = 0; base < sequences; base += 32) {
      const int s = base + lane;
      const int tiles = s < sequences ? (cu_seqlens[s + 1] - cu_seqlens[s] + kBlockM - 1) / kBlockM : 0;
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
          tile_sequence = s;
          tile_index = target - before - exclusive;
        }
        break;
      }
      before += __shfl_sync(0xffffffffu, inclusive, 31);
    }
  }
  __syncthreads();
  if (tile_sequence < 0) return;

  const int head = blockIdx.y;
  const int kv_head = head / (num_heads / num_kv_heads);
  const int64_t row_size = int64_t{num_heads + 2 * num_kv_heads} * head_dim;
  const int64_t q_column = int64_t{head} * head_dim;
  const int64_t k_column = int64_t{num_heads + kv_head} * head_dim;
  const int64_t v_column = int64_t{num_heads + num_kv_heads + kv_head} * head_dim;
  const int sequence_begin = cu_seqlens[tile_sequence];
  const int sequence_end = cu_seqlens[tile_sequence + 1];
  const int q_begin = sequence_begin + tile_index * kBlockM;
  const int q_rows = min(kBlockM, sequence_end - q_begin);
  // Keys any query of the tile sees: causal, none past its last query; with a window, none
  // further than window − 1 before its first query or after its last.
  int kv_begin = sequence_begin;
  int kv_end = causal ? q_begin + q_rows : sequence_end;
  if (window > 0) {
    kv_begin = max(sequence_begin, q_begin - window + 1);
    kv_end = min(kv_end, q_begin + q_rows - 1 + window);
  }

  // Queries, pre-scaled, as fp32; rows past the sequence are zero.
  for (int k = threadIdx.x; k < kBlockM * head_dim; k += kThreads) {
    const int i = k / head_dim;
    const int d = k - i * head_dim;
    float value = 0.0f;
    if (i < q_rows) value = __bfloat162float(qkv[(q_begin + i) * row_size + q_column + d]) * scale;
    q_tile[i * layout.q_stride + d] = value;
  }
  if (threadIdx.x < kBlockM) {
    row_max[threadIdx.x] = -INFINITY;
    row_sum[threadIdx.x] = 0.0f;
  }

  const int outputs = kBlockM * head_dim;
  float accumulator[kMaxAccumulators];
#pragma unroll
  for (int a = 0; a < kMaxAccumulators; ++a) accumulator[a] = 0.0f;

  const int pairs = head_dim / 2;
  for (int k_begin = kv_begin; k_begin < kv_end; k_begin += kBlockN) {
    const int k_rows = min(kBlockN, kv_end - k_begin);
    __syncthreads();  // the previous tile is fully consumed
    // Keys and values as bf16 pairs; rows past the range are zero (0 · garbage could be NaN).
    for (int k = threadIdx.x; k < kBlockN * pairs; k += kThreads) {
      const int j = k / pairs;
      const int p = k - j * pairs;
      __nv_bfloat162 key = __floats2bfloat162_rn(0.0f, 0.0f);
      __nv_bfloat162 value = key;
      if (j < k_rows) {
        const int64_t row = (k_begin + j) * row_size;
        key = reinterpret_cast<const __nv_bfloat162*>(qkv + row + k_column)[p];
        value = reinterpret_cast<const __nv_bfloat162*>(qkv + row + v_column)[p];
      }
      reinterpret_cast<__nv_bfloat162*>(k_tile + j * layout.k_stride)[p] = key;
      reinterpret_cast<__nv_bfloat162*>(v_tile + j * layout.v_stride)[p] = value;
    }
    __syncthreads();
    // Scores q·k for the tile, masked to -inf outside the sequence, past the query (causal),
    // outside the window or for query rows past the sequence.
    for (int k = threadIdx.x; k < kBlockM * kBlockN; k += kThreads) {
      const int i = k / kBlockN;
      const int j = k - i * kBlockN;
      const int key_position = k_begin + j;
      float score = -INFINITY;
      const int distance = key_position - (q_begin + i);
      if (i < q_rows && j < k_rows && (!causal || distance <= 0) && (window <= 0 || abs(distance) < window)) {
        const float* q = q_tile + i * layout.q_stride;
        const __nv_bfloat162* key = reinterpret_cast<const __nv_bfloat162*>(k_tile + j * layout.k_stride);
        float dot = 0.0f;
        for (int p = 0; p < pairs; ++p) {
          const float2 kf = __bfloat1622float2(key[p]);
          dot = fmaf(q[2 * p], kf.x, dot);
          dot = fmaf(q[2 * p + 1], kf.y, dot);
        }
        score = dot;
      }
      scores[i * s_stride + j] = score;
    }
    __syncthreads();
    // Online softmax: each warp updates whole rows.
    for (int i = warp; i < kBlockM; i += kThreads / 32) {
      float* row = scores + i * s_stride;
      const float a = row[lane];
      const float b = row[lane + 32];
      const float tile_max = WarpMax(fmaxf(a, b));
      const float old_max = row_max[i];
      const float new_max = fmaxf(old_max, tile_max);
      float pa = 0.0f;
      float pb = 0.0f;
      float alpha = 1.0f;
      if (new_max != -INFINITY) {
        pa = expf(a - new_max);
        pb = expf(b - new_max);
        alpha = old_max == -INFINITY ? 0.0f : expf(old_max - new_max);
      }
      row[lane] = pa;
      row[lane + 32] = pb;
      const float tile_sum = WarpSum(pa + pb);
      if (lane == 0) {
        row_sum[i] = row_sum[i] * alpha + tile_sum;
        row_max[i] = new_max;
        row_alpha[i] = alpha;
      }
    }
    __syncthreads();
    // Output accumulators: thread owns outputs o = threadIdx.x + a · kThreads of [kBlockM, d].
#pragma unroll
    for (int a = 0; a < kMaxAccumulators; ++a) {
      const int o = threadIdx.x + a * kThreads;
      if (o < outputs) {
        const int i = o / head_dim;
        const int d = o - i * head_dim;
        const float* p = scores + i * s_stride;
        float sum = accumulator[a] * row_alpha[i];
        for (int j = 0; j < k_rows; ++j) sum = fmaf(p[j], __bfloat162float(v_tile[j * layout.v_stride + d]), sum);
        accumulator[a] = sum;
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int a = 0; a < kMaxAccumulators; ++a) {
    const int o = threadIdx.x + a * kThreads;
    if (o < outputs) {
      const int i = o / head_dim;
      const int d = o - i * head_dim;
      if (i < q_rows) {
        const float total = row_sum[i];
        const float value = total > 0.0f ? accumulator[a] / total : 0.0f;
        output[(q_begin + i) * int64_t{num_heads} * head_dim + q_column + d] = __float2bfloat16(value);
      }
    }
  }
}

}  // namespace

Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                 const ops::AttentionOptions& options, Tensor& output) {
  auto context = RequireContext("attention");
  if (!context.ok()) return context.status();
  if (options.position_bias != nullptr) {
    return Status::Error("attention: relative position bias is not supported on cuda yet");
  }
  if (options.disentangled_bias != nullptr) {
    return Status::Error("attention: DeBERTa's disentangled (c2p/p2c) position bias is not supported on cuda yet; "
                         "run DeBERTa models on the cpu");
  }
  if (layout.head_dim % 2 != 0 || layout.head_dim > kMaxHeadDim) {
    return Status::Error("attention: the cuda kernel takes an even head_dim up to " + std::to_string(kMaxHeadDim) +
                         ", got " + std::to_string(layout.head_dim));
  }
  const int64_t tokens = qkv.dim(0);
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  if (tokens == 0 || sequences <= 0) return Status();
  const SharedLayout shared = MakeLayout(static_cast<int>(layout.head_dim));
  // Opt in to more than 48 KiB once per size (never during a capture: an eager step of the
  // same shapes always comes first).
  static std::atomic<size_t> allowed{0};
  if (shared.bytes > 48 * 1024 && shared.bytes > allowed.load()) {
    STAMEN_RETURN_IF_ERROR(CheckCuda(cudaFuncSetAttribute(RaggedAttentionKernel,
                                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                          static_cast<int>(shared.bytes)),
                                     "attention (shared memory)"));
    allowed.store(shared.bytes);
  }
  const int64_t tiles = (tokens + kBlockM - 1) / kBlockM + sequences;
  const dim3 grid(static_cast<unsigned int>(tiles), static_cast<unsigned int>(layout.num_heads));
  const float scale = options.scale > 0.0f ? options.scale : 1.0f / std::sqrt(static_cast<float>(layout.head_dim));
  // Sequences are far shorter than 2^31 tokens: a wider window is the same as none.
  const int window = static_cast<int>(std::min<int64_t>(options.window, tokens + 1));
  RaggedAttentionKernel<<<grid, kThreads, shared.bytes, (*context)->stream()>>>(
      qkv.data<bf16>(), cu_seqlens.data<int32_t>(), static_cast<int>(sequences), static_cast<int>(layout.num_heads),
      static_cast<int>(layout.num_kv_heads), static_cast<int>(layout.head_dim), scale, options.causal, window,
      output.data<bf16>());
  return CheckLaunch("attention");
}

}  // namespace stamen::engine::cuda
