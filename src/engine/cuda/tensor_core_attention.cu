// Ragged attention on tensor cores, FlashAttention-2's scheme: each block owns a tile of
// kBlockM = 64 queries of one sequence and one head, one warp per 16 query rows; it streams
// the sequence's keys and values through shared memory kBlockN at a time, computes the scores
// with mma.sync (bf16 in, fp32 out, tensor_core.cuh), keeps them in registers, applies the
// masks and the online softmax there (a running max and sum per row), rounds the weights to
// bf16 in place as the A operand of the product with the values, and accumulates the output
// in fp32 registers. Nothing of size tokens² exists anywhere; the block's only shared data
// are its queries, one key tile and one value tile.
//
// What it serves: the attention of every family without learned position terms inside
// attention (BERT, XLM-R, RoBERTa, ModernBERT, NomicBERT, GTE, Qwen, Gemma, Llama, Mistral,
// EuroBERT) and JinaBERT's ALiBi (−slope_h · |i − j|, computed in registers), and Gemma 2's
// logit soft-capping (cap · tanh(score / cap), in registers): bidirectional or causal, sliding
// windows, grouped-query heads, head_dim 32, 64, 128 or 256.
// MPNet's relative bias and DeBERTa's disentangled terms stay on the scalar kernel
// (attention.cu), which is also the fallback for other head sizes and for GPUs before sm_80.
//
// Choices, for a first version that must be right before it is tuned on a GPU:
// - Values are stored transposed in shared memory ([dim][key]), so that both products read
//   their B fragments with plain 32-bit loads (no ldmatrix); threads that copy a value tile
//   take adjacent keys, so the transposed stores do not collide in one bank.
// - Rows are padded by 8 bf16 (16 bytes): the 8 rows × 4 lanes of a fragment load then fall in
//   32 different banks for every head size here.
// - Loads are synchronous (no cp.async double buffering yet); the grid's blocks overlap each
//   other's loads instead.
// - head_dim 256 takes 32 keys per tile, to keep its 128 fp32 output accumulators per thread
//   without spilling.
// The grid is the scalar kernel's (ragged_tiles.cuh): it depends only on the token capacity
// and the sequence count, so a captured graph replays for any batch of the same bucket.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "engine/cuda/attention_choice.h"
#include "engine/cuda/common.cuh"
#include "engine/cuda/kernels.h"
#include "engine/cuda/ragged_tiles.cuh"
#include "engine/cuda/runtime.h"
#include "engine/cuda/tensor_core.cuh"

namespace stamen::engine::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kBlockM = 16 * kWarps;  // query rows per block: one 16-row fragment per warp
constexpr int kPad = 8;               // bf16 of padding per shared row

template <int kHeadDim>
struct TileShape {
  static constexpr int kBlockN = kHeadDim > 128 ? 32 : 64;  // keys per shared tile
  static constexpr int kRowStride = kHeadDim + kPad;         // queries and keys, [row][dim]
  static constexpr int kValueStride = kBlockN + kPad;        // values transposed, [dim][key]
  static constexpr size_t kSharedBytes =
      sizeof(bf16) * (size_t{kBlockM} * kRowStride + size_t{kBlockN} * kRowStride + size_t{kHeadDim} * kValueStride);
};

// Gemma 2's logit soft-capping in the scores' base-2 scale: a raw q·k becomes
// log2 · tanh(q·k · scale_over_cap), i.e. cap · tanh(scaled score / cap) · log2 e; log2 0: none.
struct SoftCap {
  float log2 = 0.0f;            // cap · log2 e
  float scale_over_cap = 0.0f;  // the attention scale ÷ cap
};

template <int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    TensorCoreAttentionKernel(const bf16* __restrict__ qkv, const int32_t* __restrict__ cu_seqlens, int sequences,
                              int num_heads, int num_kv_heads, float scale_log2, bool causal, int window,
                              SoftCap cap, const float* __restrict__ alibi_slopes, bf16* __restrict__ output) {
  using Shape = TileShape<kHeadDim>;
  constexpr int kBlockN = Shape::kBlockN;
  constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks (uint4) per row of one head
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ int tile_sequence;
  __shared__ int tile_index;
  bf16* q_tile = reinterpret_cast<bf16*>(shared);
  bf16* k_tile = q_tile + kBlockM * Shape::kRowStride;
  bf16* v_tile = k_tile + kBlockN * Shape::kRowStride;

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int group = lane / 4;  // the fragment row (and B column) this lane holds
  const int quad = lane % 4;   // which column pair of it

  if (warp == 0) FindQueryTile(cu_seqlens, sequences, kBlockM, blockIdx.x, tile_sequence, tile_index);
  __syncthreads();
  if (tile_sequence < 0) return;

  const int head = blockIdx.y;
  // ALiBi's slope in the scores' base-2 scale; 0 without ALiBi.
  const float alibi_log2 = alibi_slopes != nullptr ? alibi_slopes[head] * 1.4426950408889634f : 0.0f;
  const auto [row_size, q_column, k_column, v_column, q_begin, q_rows, kv_begin, kv_end] = LocateQueryTile(
      cu_seqlens, tile_sequence, tile_index, kBlockM, head, num_heads, num_kv_heads, kHeadDim, causal, window);

  // Queries as they are (bf16); the scale is applied to the fp32 scores. Rows past the
  // sequence are zero.
  for (int c = threadIdx.x; c < kBlockM * kChunks; c += kThreads) {
    const int i = c / kChunks;
    const int part = c - i * kChunks;
    uint4 chunk = make_uint4(0, 0, 0, 0);
    if (i < q_rows) chunk = *reinterpret_cast<const uint4*>(qkv + (q_begin + i) * row_size + q_column + part * 8);
    *reinterpret_cast<uint4*>(q_tile + i * Shape::kRowStride + part * 8) = chunk;
  }

  // This warp's rows of the tile: warp_row + group and warp_row + group + 8.
  const int warp_row = warp * 16;
  const bool warp_has_rows = warp_row < q_rows;
  // The rows' first and last query positions, for skipping key tiles the masks hide whole.
  const int warp_first_query = q_begin + warp_row;
  const int warp_last_query = q_begin + min(warp_row + 15, q_rows - 1);
  float out[kHeadDim / 8][4];
#pragma unroll
  for (int n = 0; n < kHeadDim / 8; ++n) out[n][0] = out[n][1] = out[n][2] = out[n][3] = 0.0f;
  // Per row half r (row group + 8r): the running max (base-2 scaled scores) and this lane's
  // part of the running sum (the 4 lanes of a group add theirs at the end).
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};

  for (int k_begin = kv_begin; k_begin < kv_end; k_begin += kBlockN) {
    const int k_rows = min(kBlockN, kv_end - k_begin);
    __syncthreads();  // the previous tiles are fully read
    // Keys as [key][dim]; values transposed to [dim][key], adjacent threads on adjacent keys.
    // Rows past the range are zero (0 · garbage could be NaN).
    for (int c = threadIdx.x; c < kBlockN * kChunks; c += kThreads) {
      const int j = c / kChunks;
      const int part = c - j * kChunks;
      uint4 chunk = make_uint4(0, 0, 0, 0);
      if (j < k_rows) chunk = *reinterpret_cast<const uint4*>(qkv + (k_begin + j) * row_size + k_column + part * 8);
      *reinterpret_cast<uint4*>(k_tile + j * Shape::kRowStride + part * 8) = chunk;
    }
    for (int c = threadIdx.x; c < kBlockN * kChunks; c += kThreads) {
      const int part = c / kBlockN;
      const int j = c - part * kBlockN;
      uint4 chunk = make_uint4(0, 0, 0, 0);
      if (j < k_rows) chunk = *reinterpret_cast<const uint4*>(qkv + (k_begin + j) * row_size + v_column + part * 8);
      const bf16* values = reinterpret_cast<const bf16*>(&chunk);
#pragma unroll
      for (int e = 0; e < 8; ++e) v_tile[(part * 8 + e) * Shape::kValueStride + j] = values[e];
    }
    __syncthreads();

    // Warp-uniform skips: no rows of this warp in the sequence, or every pair masked (the
    // whole key tile after the warp's last query when causal, or outside the window).
    const int k_last = k_begin + k_rows - 1;
    bool hidden = !warp_has_rows || (causal && k_begin > warp_last_query);
    if (window > 0) hidden = hidden || k_begin - warp_last_query >= window || warp_first_query - k_last >= window;
    if (hidden) continue;

    // Scores: [16 rows][kBlockN keys] as kBlockN / 8 fragments of 16 × 8.
    float scores[kBlockN / 8][4];
#pragma unroll
    for (int n = 0; n < kBlockN / 8; ++n) scores[n][0] = scores[n][1] = scores[n][2] = scores[n][3] = 0.0f;
#pragma unroll
    for (int step = 0; step < kHeadDim / 16; ++step) {
      const bf16* q_row = q_tile + (warp_row + group) * Shape::kRowStride + step * 16 + 2 * quad;
      const uint32_t a[4] = {LoadPair(q_row), LoadPair(q_row + 8 * Shape::kRowStride), LoadPair(q_row + 8),
                             LoadPair(q_row + 8 * Shape::kRowStride + 8)};
#pragma unroll
      for (int n = 0; n < kBlockN / 8; ++n) {
        const bf16* k_row = k_tile + (n * 8 + group) * Shape::kRowStride + step * 16 + 2 * quad;
        const uint32_t b[2] = {LoadPair(k_row), LoadPair(k_row + 8)};
        MultiplyAccumulate(scores[n], a, b);
      }
    }

    // Masks, scale and the online softmax, row half by row half.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = warp_row + group + 8 * r;
      const int query = q_begin + row;
      float tile_max = -INFINITY;
#pragma unroll
      for (int n = 0; n < kBlockN / 8; ++n) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int key = n * 8 + 2 * quad + c;
          const int distance = k_begin + key - query;
          const bool visible = row < q_rows && key < k_rows && (!causal || distance <= 0) &&
                               (window <= 0 || abs(distance) < window);
          const float scaled = cap.log2 > 0.0f ? cap.log2 * tanhf(scores[n][2 * r + c] * cap.scale_over_cap)
                                               : scores[n][2 * r + c] * scale_log2;
          const float score = visible ? fmaf(-alibi_log2, static_cast<float>(abs(distance)), scaled) : -INFINITY;
          scores[n][2 * r + c] = score;
          tile_max = fmaxf(tile_max, score);
        }
      }
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float new_max = fmaxf(row_max[r], tile_max);
      // A row that has seen no visible key yet keeps max −∞ and weights 0.
      const float alpha = new_max == -INFINITY ? 1.0f : exp2f(row_max[r] - new_max);
      row_max[r] = new_max;
      row_sum[r] *= alpha;
#pragma unroll
      for (int n = 0; n < kHeadDim / 8; ++n) {
        out[n][2 * r] *= alpha;
        out[n][2 * r + 1] *= alpha;
      }
#pragma unroll
      for (int n = 0; n < kBlockN / 8; ++n) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const float weight = new_max == -INFINITY ? 0.0f : exp2f(scores[n][2 * r + c] - new_max);
          scores[n][2 * r + c] = weight;
          row_sum[r] += weight;
        }
      }
    }

    // out += weights · values: two adjacent score fragments (16 keys) are one A fragment.
#pragma unroll
    for (int step = 0; step < kBlockN / 16; ++step) {
      const uint32_t a[4] = {PackPair(scores[2 * step][0], scores[2 * step][1]),
                             PackPair(scores[2 * step][2], scores[2 * step][3]),
                             PackPair(scores[2 * step + 1][0], scores[2 * step + 1][1]),
                             PackPair(scores[2 * step + 1][2], scores[2 * step + 1][3])};
#pragma unroll
      for (int n = 0; n < kHeadDim / 8; ++n) {
        const bf16* v_row = v_tile + (n * 8 + group) * Shape::kValueStride + step * 16 + 2 * quad;
        const uint32_t b[2] = {LoadPair(v_row), LoadPair(v_row + 8)};
        MultiplyAccumulate(out[n], a, b);
      }
    }
  }

  // Divide by the row sums (the group's 4 lanes added) and store the rows in the sequence.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = row_sum[r];
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    const int row = warp_row + group + 8 * r;
    if (row >= q_rows) continue;
    const float inverse = total > 0.0f ? 1.0f / total : 0.0f;
    bf16* destination = output + (q_begin + row) * int64_t{num_heads} * kHeadDim + q_column + 2 * quad;
#pragma unroll
    for (int n = 0; n < kHeadDim / 8; ++n) {
      *reinterpret_cast<__nv_bfloat162*>(destination + n * 8) =
          __floats2bfloat162_rn(out[n][2 * r] * inverse, out[n][2 * r + 1] * inverse);
    }
  }
}

}  // namespace

bool TensorCoreAttentionFits(const Tensor& qkv, const ops::QkvLayout& layout, const ops::AttentionOptions& options) {
  auto context = RequireContext("attention");
  if (!context.ok()) return false;
  // MPNet's and DeBERTa's terms stay on the scalar kernel; ALiBi runs here.
  const bool position_terms = options.position_bias != nullptr || options.disentangled_bias != nullptr;
  // 16-byte chunk loads: the tensor starts on 16 bytes (rows and column offsets are multiples
  // of head_dim, itself a multiple of 8 here). Device allocations are 256-byte aligned.
  return ChooseAttentionKernel(layout.head_dim, position_terms, ComputeCapabilityMajor((*context)->device()),
                               ScalarAttentionForced())
             .tensor_cores &&
         reinterpret_cast<uintptr_t>(qkv.data<bf16>()) % 16 == 0;
}

template <int kHeadDim>
Status LaunchTensorCoreAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                                 const ops::AttentionOptions& options, Tensor& output, Context& context) {
  using Shape = TileShape<kHeadDim>;
  // Opt in to more than 48 KiB once per instantiation (never during a capture: an eager step
  // of the same shapes always comes first).
  static std::atomic<bool> opted_in{false};
  if (Shape::kSharedBytes > 48 * 1024 && !opted_in.load()) {
    STAMEN_RETURN_IF_ERROR(CheckCuda(cudaFuncSetAttribute(TensorCoreAttentionKernel<kHeadDim>,
                                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                          static_cast<int>(Shape::kSharedBytes)),
                                     "attention (shared memory)"));
    opted_in.store(true);
  }
  const int64_t tokens = qkv.dim(0);
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  const int64_t tiles = (tokens + kBlockM - 1) / kBlockM + sequences;
  const dim3 grid(static_cast<unsigned int>(tiles), static_cast<unsigned int>(layout.num_heads));
  const float scale = options.scale > 0.0f ? options.scale : 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const float scale_log2 = scale * 1.4426950408889634f;  // exp(x) = exp2(x · log2 e)
  const SoftCap cap = options.softcap > 0.0f ? SoftCap{options.softcap * 1.4426950408889634f, scale / options.softcap}
                                             : SoftCap{};
  const int window = static_cast<int>(std::min<int64_t>(options.window, tokens + 1));
  TensorCoreAttentionKernel<kHeadDim><<<grid, kThreads, Shape::kSharedBytes, context.stream()>>>(
      qkv.data<bf16>(), cu_seqlens.data<int32_t>(), static_cast<int>(sequences), static_cast<int>(layout.num_heads),
      static_cast<int>(layout.num_kv_heads), scale_log2, options.causal, window, cap,
      options.alibi != nullptr ? options.alibi->slopes.data<float>() : nullptr, output.data<bf16>());
  return CheckLaunch("attention (tensor cores)");
}

Status TensorCoreAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                           const ops::AttentionOptions& options, Tensor& output) {
  auto context = RequireContext("attention");
  if (!context.ok()) return context.status();
  if (qkv.dim(0) == 0 || cu_seqlens.dim(0) <= 1) return Status();
  switch (layout.head_dim) {
    case 32: return LaunchTensorCoreAttention<32>(qkv, cu_seqlens, layout, options, output, **context);
    case 64: return LaunchTensorCoreAttention<64>(qkv, cu_seqlens, layout, options, output, **context);
    case 128: return LaunchTensorCoreAttention<128>(qkv, cu_seqlens, layout, options, output, **context);
    case 256: return LaunchTensorCoreAttention<256>(qkv, cu_seqlens, layout, options, output, **context);
    default: return Status::Error("attention: no tensor-core kernel for head_dim " + std::to_string(layout.head_dim));
  }
}

}  // namespace stamen::engine::cuda
