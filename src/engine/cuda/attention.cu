// Ragged attention: sequences concatenated along the token axis, boundaries in cu_seqlens,
// no padding computed. FlashAttention-style: each block owns a tile of up to kBlockM queries
// of one sequence and one head, streams that sequence's keys and values through shared memory
// in tiles of kBlockN, and keeps a running max and sum per query (online softmax), so the
// score matrix never exists in global memory. bf16 in and out, fp32 inside.
//
// The grid depends only on the token capacity and the sequence count (an upper bound on the
// number of tiles, ceil(T / kBlockM) + S, ragged_tiles.cuh), never on the lengths, so a
// captured graph replays correctly for any batch with the same (S, T bucket); surplus blocks
// exit at once.
//
// This is the portable scalar-FMA version (no tensor-core MMA): correct for any even head_dim
// up to 256, grouped-query heads, causal masks and sliding windows (ops::AttentionOptions), on
// any GPU. Calls without position terms at head_dim 32, 64, 128 or 256 on sm_80 or newer go to
// the tensor-core kernel instead (tensor_core_attention.cu, attention_choice.h); this one keeps
// the position terms below and is the fallback.
//
// Position terms (ops::AttentionOptions), added to a visible pair's scaled score:
// - MPNet's relative position bias: the table's entry for (bucket of j − i, head);
// - DeBERTa's c2p (scale · q_i · position_key[row]) and p2c (scale · k_j · position_query[row]),
//   row = DisentangledPositionRow(i − j);
// - ALiBi (JinaBERT): −slope_h · |i − j|, the head's slope read once into a register.
// Gemma 2's logit soft-capping (softcap > 0) squashes a visible pair's scaled score to
// softcap · tanh(score / softcap) instead; the op never combines it with a position term.
// A tile of kBlockM queries against kBlockN keys meets kBlockM + kBlockN − 1 offsets i − j, so
// per key tile the block computes each offset's bucket or row once (position_buckets.h, the
// functions the CPU kernel calls) and keeps the offset's bias, or its position key and query
// vectors, in shared memory beside the keys; a score then reads its offset's entry. The
// position vectors cost one more dot product per score and term, as on the CPU.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "engine/cuda/common.cuh"
#include "engine/cuda/kernels.h"
#include "engine/cuda/ragged_tiles.cuh"

namespace stamen::engine::cuda {
namespace {

constexpr int kBlockM = 32;   // queries per block
constexpr int kBlockN = 64;   // keys per shared-memory tile
constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;
constexpr int kMaxAccumulators = (kBlockM * kMaxHeadDim + kThreads - 1) / kThreads;
// Offsets i − j one tile of queries meets against one tile of keys: index e = i − j + kBlockN − 1
// for query row i and key column j of the tile.
constexpr int kTileOffsets = kBlockM + kBlockN - 1;

// An attention call's position terms as the kernel reads them (ops::RelativePositionBias and
// ops::DisentangledPositionBias, pointers instead of tensors); a null table or projections
// pointer leaves that term out.
struct PositionTerms {
  const float* bias_table = nullptr;  // MPNet: F32 [num_buckets, num_heads]
  int num_buckets = 0;
  int max_distance = 0;
  const bf16* projections = nullptr;  // DeBERTa: [2 · span, projection_columns]
  int64_t projection_columns = 0;
  int64_t query_column = -1;  // head h's position query at + h · head_dim; -1: no p2c
  int64_t key_column = -1;    // head h's position key at + h · head_dim; -1: no c2p
  int span = 0;
  int position_buckets = 0;
  int max_relative_positions = 0;
  const float* alibi_slopes = nullptr;  // ALiBi: F32 [num_heads]

  __host__ __device__ bool content_to_position() const { return projections != nullptr && key_column >= 0; }
  __host__ __device__ bool position_to_content() const { return projections != nullptr && query_column >= 0; }
};

struct SharedLayout {
  int q_stride;  // floats per query row
  int k_stride;  // bf16 per key row (padded so lanes reading different keys hit different banks)
  int v_stride;  // bf16 per value row
  int position_stride;  // bf16 per position key / query row, padded as keys are
  size_t q_offset, k_offset, v_offset, s_offset, stats_offset;
  // Per offset e of the tile: MPNet's bias (F32), DeBERTa's projections row (I32), then the
  // position keys (c2p) and position queries (p2c), kTileOffsets rows each, present only when
  // their term is (so models without position terms keep the shared memory they had).
  size_t offset_bias_offset, position_row_offset, position_key_offset, position_query_offset, bytes;
};

__host__ __device__ inline SharedLayout MakeLayout(int head_dim, const PositionTerms& terms) {
  SharedLayout layout{};
  layout.q_stride = head_dim + 1;
  layout.k_stride = head_dim + 2;
  layout.v_stride = head_dim;
  layout.position_stride = head_dim + 2;
  layout.q_offset = 0;
  layout.k_offset = layout.q_offset + sizeof(float) * kBlockM * layout.q_stride;
  layout.v_offset = layout.k_offset + sizeof(bf16) * kBlockN * layout.k_stride;
  layout.s_offset = (layout.v_offset + sizeof(bf16) * kBlockN * layout.v_stride + 15) / 16 * 16;
  layout.stats_offset = layout.s_offset + sizeof(float) * kBlockM * (kBlockN + 1);
  size_t end = layout.stats_offset + sizeof(float) * 3 * kBlockM;
  layout.offset_bias_offset = end;
  if (terms.bias_table != nullptr) end += sizeof(float) * kTileOffsets;
  layout.position_row_offset = end;
  if (terms.projections != nullptr) end += sizeof(int32_t) * kTileOffsets;
  const size_t position_rows_bytes = sizeof(bf16) * kTileOffsets * layout.position_stride;
  layout.position_key_offset = (end + 15) / 16 * 16;
  end = layout.position_key_offset + (terms.content_to_position() ? position_rows_bytes : 0);
  layout.position_query_offset = (end + 15) / 16 * 16;
  end = layout.position_query_offset + (terms.position_to_content() ? position_rows_bytes : 0);
  layout.bytes = end;
  return layout;
}

// The thread's outputs of the [kBlockM, head_dim] tile: o = threadIdx.x + a · kThreads for each
// accumulator a with o < outputs, at row i and column d. Both the weighted sums and the final
// division walk them; unrolled, each a is a constant and the accumulators stay in registers.
template <typename Visit>
__device__ __forceinline__ void ForEachOwnedOutput(int outputs, int head_dim, Visit&& visit) {
#pragma unroll
  for (int a = 0; a < kMaxAccumulators; ++a) {
    const int o = threadIdx.x + a * kThreads;
    if (o < outputs) {
      const int i = o / head_dim;
      visit(a, i, o - i * head_dim);
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    RaggedAttentionKernel(const bf16* __restrict__ qkv, const int32_t* __restrict__ cu_seqlens, int sequences,
                          int num_heads, int num_kv_heads, int head_dim, float scale, bool causal,
                          int window, float softcap, PositionTerms terms, bf16* __restrict__ output) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ int tile_sequence;
  __shared__ int tile_index;
  const SharedLayout layout = MakeLayout(head_dim, terms);
  float* q_tile = reinterpret_cast<float*>(shared + layout.q_offset);
  bf16* k_tile = reinterpret_cast<bf16*>(shared + layout.k_offset);
  bf16* v_tile = reinterpret_cast<bf16*>(shared + layout.v_offset);
  float* scores = reinterpret_cast<float*>(shared + layout.s_offset);
  float* row_max = reinterpret_cast<float*>(shared + layout.stats_offset);
  float* row_sum = row_max + kBlockM;
  float* row_alpha = row_sum + kBlockM;
  float* offset_bias = reinterpret_cast<float*>(shared + layout.offset_bias_offset);
  int32_t* position_rows = reinterpret_cast<int32_t*>(shared + layout.position_row_offset);
  bf16* position_keys = reinterpret_cast<bf16*>(shared + layout.position_key_offset);
  bf16* position_queries = reinterpret_cast<bf16*>(shared + layout.position_query_offset);
  const int s_stride = kBlockN + 1;
  const bool relative_bias = terms.bias_table != nullptr;
  const bool content_to_position = terms.content_to_position();
  const bool position_to_content = terms.position_to_content();

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;

  // Which (sequence, query tile) this block owns.
  if (warp == 0) FindQueryTile(cu_seqlens, sequences, kBlockM, blockIdx.x, tile_sequence, tile_index);
  __syncthreads();
  if (tile_sequence < 0) return;

  const int head = blockIdx.y;
  const float alibi_slope = terms.alibi_slopes != nullptr ? terms.alibi_slopes[head] : 0.0f;
  const auto [row_size, q_column, k_column, v_column, q_begin, q_rows, kv_begin, kv_end] = LocateQueryTile(
      cu_seqlens, tile_sequence, tile_index, kBlockM, head, num_heads, num_kv_heads, head_dim, causal, window);

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
    // Offset e of this tile is i − j = first_offset + e (positions within the sequence: both
    // tiles lie in it, so global token indices give the same difference).
    const int first_offset = q_begin - k_begin - (kBlockN - 1);
    if (relative_bias || terms.projections != nullptr) {
      for (int e = threadIdx.x; e < kTileOffsets; e += kThreads) {
        const int query_minus_key = first_offset + e;
        if (relative_bias) {
          // MPNet's bucket is of j − i.
          const int32_t bucket = ops::RelativePositionBucket(-query_minus_key, terms.num_buckets, terms.max_distance);
          offset_bias[e] = terms.bias_table[int64_t{bucket} * num_heads + head];
        }
        if (terms.projections != nullptr) {
          position_rows[e] = ops::DisentangledPositionRow(query_minus_key, terms.span, terms.position_buckets,
                                                          terms.max_relative_positions);
        }
      }
    }
    if (content_to_position || position_to_content) {
      __syncthreads();  // the rows are written
      // Element by element: a row's columns need not be bf16-pair aligned.
      for (int k = threadIdx.x; k < kTileOffsets * head_dim; k += kThreads) {
        const int e = k / head_dim;
        const int d = k - e * head_dim;
        const bf16* row = terms.projections + int64_t{position_rows[e]} * terms.projection_columns +
                          int64_t{head} * head_dim + d;
        if (content_to_position) position_keys[e * layout.position_stride + d] = row[terms.key_column];
        if (position_to_content) position_queries[e * layout.position_stride + d] = row[terms.query_column];
      }
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
        const int e = i - j + (kBlockN - 1);
        if (content_to_position) {
          // The query is already scaled: scale · q_i · position_key.
          const __nv_bfloat162* position_key =
              reinterpret_cast<const __nv_bfloat162*>(position_keys + e * layout.position_stride);
          for (int p = 0; p < pairs; ++p) {
            const float2 pk = __bfloat1622float2(position_key[p]);
            dot = fmaf(q[2 * p], pk.x, dot);
            dot = fmaf(q[2 * p + 1], pk.y, dot);
          }
        }
        if (position_to_content) {
          const __nv_bfloat162* position_query =
              reinterpret_cast<const __nv_bfloat162*>(position_queries + e * layout.position_stride);
          float term = 0.0f;
          for (int p = 0; p < pairs; ++p) {
            const float2 kf = __bfloat1622float2(key[p]);
            const float2 pq = __bfloat1622float2(position_query[p]);
            term = fmaf(kf.x, pq.x, term);
            term = fmaf(kf.y, pq.y, term);
          }
          dot = fmaf(term, scale, dot);
        }
        if (relative_bias) dot += offset_bias[e];
        dot = fmaf(-alibi_slope, static_cast<float>(abs(distance)), dot);  // 0 without ALiBi
        if (softcap > 0.0f) dot = softcap * tanhf(dot / softcap);
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
    ForEachOwnedOutput(outputs, head_dim, [&](int a, int i, int d) {
      const float* p = scores + i * s_stride;
      float sum = accumulator[a] * row_alpha[i];
      for (int j = 0; j < k_rows; ++j) sum = fmaf(p[j], __bfloat162float(v_tile[j * layout.v_stride + d]), sum);
      accumulator[a] = sum;
    });
  }
  __syncthreads();
  ForEachOwnedOutput(outputs, head_dim, [&](int a, int i, int d) {
    if (i < q_rows) {
      const float total = row_sum[i];
      const float value = total > 0.0f ? accumulator[a] / total : 0.0f;
      output[(q_begin + i) * int64_t{num_heads} * head_dim + q_column + d] = __float2bfloat16(value);
    }
  });
}

}  // namespace

Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                 const ops::AttentionOptions& options, Tensor& output) {
  if (TensorCoreAttentionFits(qkv, layout, options)) return TensorCoreAttention(qkv, cu_seqlens, layout, options, output);
  return ScalarAttention(qkv, cu_seqlens, layout, options, output);
}

Status ScalarAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                       const ops::AttentionOptions& options, Tensor& output) {
  auto context = RequireContext("attention");
  if (!context.ok()) return context.status();
  if (layout.head_dim % 2 != 0 || layout.head_dim > kMaxHeadDim) {
    return Status::Error("attention: the cuda kernel takes an even head_dim up to " + std::to_string(kMaxHeadDim) +
                         ", got " + std::to_string(layout.head_dim));
  }
  const int64_t tokens = qkv.dim(0);
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  if (tokens == 0 || sequences <= 0) return Status();
  // The op has checked the tables' dtypes (F32 bias table, projections of qkv's BF16), shapes,
  // columns and devices.
  PositionTerms terms;
  if (const ops::RelativePositionBias* bias = options.position_bias; bias != nullptr) {
    terms.bias_table = bias->table.data<float>();
    terms.num_buckets = bias->num_buckets;
    terms.max_distance = bias->max_distance;
  }
  if (const ops::DisentangledPositionBias* bias = options.disentangled_bias; bias != nullptr) {
    terms.projections = bias->projections.data<bf16>();
    terms.projection_columns = bias->projections.dim(1);
    terms.query_column = bias->query_column;
    terms.key_column = bias->key_column;
    terms.span = bias->span;
    terms.position_buckets = bias->position_buckets;
    terms.max_relative_positions = bias->max_relative_positions;
  }
  if (options.alibi != nullptr) terms.alibi_slopes = options.alibi->slopes.data<float>();
  const SharedLayout shared = MakeLayout(static_cast<int>(layout.head_dim), terms);
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
      options.softcap, terms, output.data<bf16>());
  return CheckLaunch("attention");
}

}  // namespace stamen::engine::cuda
