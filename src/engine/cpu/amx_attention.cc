// Attention in bf16 on AMX tiles (see amx_attention.h): both products of a block of queries
// run through the AMX GEMM's tile product (amx_gemm.h), the softmax between them in fp32.
//
// Per (sequence, key/value head): the keys packed as pair panels of 16 keys over the head
// dimension ([key panel][d pairs][16][2], d padded to whole tiles), the values as pair panels
// of 16 dimensions over pairs of keys ([dimension panel][key pairs][16][2], keys padded to whole
// tiles). Per block of 32 (or 16) queries of each head: the queries scaled and rounded to bf16,
// their scores against every key panel (fp32 sums), a max-subtracted softmax over the sequence's
// keys in fp32, the numerators rounded to bf16 as the input of the second product, and the sums
// divided by their row's total. Each numerator e^(s − max) is taken as 2^((s − max)·log2 e)
// (TwoToTheSixteen), a shorter polynomial than e^x's.
#include "engine/cpu/amx_attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/cpu/amx_gemm.h"
#include "engine/cpu/attention_items.h"
#include "engine/cpu/avx512_math.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vector_math.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace stamen::engine::cpu {
namespace {

#define STAMEN_AMX_ATTENTION_TARGET gnu::target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")

constexpr int64_t kPanel = 16;       // keys or dimensions per pair panel
constexpr int64_t kBlockRows = 32;   // queries per block: two tiles of rows
// Heads are worth splitting between threads from this many elements of the fused QKV, as in
// attention.cc.
constexpr int64_t kParallelElements = 4096;

int64_t WholeTiles(int64_t count) { return (count + kTileDepth - 1) / kTileDepth * kTileDepth; }

// A 64-byte aligned block of `count` elements of a per-thread buffer.
template <typename T>
T* Aligned(std::vector<T>& buffer, int64_t count) {
  const size_t wanted = static_cast<size_t>(count) + 64 / sizeof(T);
  if (buffer.size() < wanted) buffer.resize(wanted);
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) & ~uintptr_t{63});
}

struct Scratch {
  std::vector<uint16_t> keys, values, queries, weights;
  std::vector<float> scores, sums;
};

// Values [length, d] (rows `row_size` apart) as pair panels of 16 dimensions over pairs of
// keys, `pairs` deep (keys past the sequence's end zero): lane c of pair i holds the bf16 values
// of keys 2i and 2i + 1 in dimension c, low half first.
[[STAMEN_AMX_ATTENTION_TARGET]] void PackValues(const float* values, int64_t row_size, int64_t length, int64_t d,
                                                int64_t pairs, uint16_t* packed) {
  const int64_t panels = (d + kPanel - 1) / kPanel;
  for (int64_t panel = 0; panel < panels; ++panel) {
    const int64_t columns = std::min(kPanel, d - panel * kPanel);
    const __mmask16 mask = static_cast<__mmask16>((1u << columns) - 1);
    uint16_t* target = packed + panel * pairs * kPanel * 2;
    for (int64_t pair = 0; pair < pairs; ++pair) {
      const int64_t first = 2 * pair;
      const __m512 even = first < length ? _mm512_maskz_loadu_ps(mask, values + first * row_size + panel * kPanel)
                                         : _mm512_setzero_ps();
      const __m512 odd = first + 1 < length
                             ? _mm512_maskz_loadu_ps(mask, values + (first + 1) * row_size + panel * kPanel)
                             : _mm512_setzero_ps();
      const __m512i low = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(even));
      const __m512i high = _mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(odd)), 16);
      _mm512_store_si512(target + pair * kPanel * 2, _mm512_or_si512(low, high));
    }
  }
}

// `rows` queries (rows `row_size` apart) times `scale`, rounded to bf16 into kBlockRows rows of
// `depth` elements (zero past d and past the last query).
[[STAMEN_AMX_ATTENTION_TARGET]] void PackQueries(const float* queries, int64_t row_size, int64_t rows, int64_t d,
                                                 float scale, int64_t depth, uint16_t* packed) {
  const __m512 factor = _mm512_set1_ps(scale);
  for (int64_t r = 0; r < kBlockRows; ++r) {
    for (int64_t c = 0; c < depth; c += 16) {
      const __mmask16 mask = static_cast<__mmask16>(r >= rows || c >= d ? 0 : d - c >= 16 ? 0xFFFF : (1u << (d - c)) - 1);
      const __m512 values = _mm512_mul_ps(factor, _mm512_maskz_loadu_ps(mask, queries + r * row_size + c));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + r * depth + c), (__m256i)_mm512_cvtneps_pbh(values));
    }
  }
}

// The lanes of 16 scores from `j` on that lie before `count`.
inline __mmask16 LanesBefore(int64_t count, int64_t j) {
  return static_cast<__mmask16>(count - j >= 16 ? 0xFFFF : count <= j ? 0 : (1u << (count - j)) - 1);
}

// One row's softmax numerators e^(score − max) over `count` scores, rounded to bf16 into
// `weights` (zero up to `padded`, a multiple of 32); returns the sum of the unrounded numerators.
// 32 scores per step, with two running maxima and two running sums: one chain of dependent adds
// had bound the loop at the adder's latency.
[[STAMEN_AMX_ATTENTION_TARGET]] float SoftmaxWeights(const float* scores, int64_t count, int64_t padded,
                                                    uint16_t* weights) {
  __m512 maxima[2] = {_mm512_set1_ps(-INFINITY), _mm512_set1_ps(-INFINITY)};
  for (int64_t j = 0; j < count; j += 32) {
    for (int half = 0; half < 2; ++half) {
      const __mmask16 mask = LanesBefore(count, j + 16 * half);
      maxima[half] = _mm512_mask_max_ps(maxima[half], mask, maxima[half], _mm512_maskz_loadu_ps(mask, scores + j + 16 * half));
    }
  }
  // e^(s − max) = 2^(s·log2 e − max·log2 e): one fused multiply-subtract per vector.
  const __m512 log2_e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 shift = _mm512_mul_ps(_mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(maxima[0], maxima[1]))), log2_e);
  __m512 totals[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t j = 0; j < padded; j += 32) {
    __m512 numerators[2];
    for (int half = 0; half < 2; ++half) {
      const __mmask16 mask = LanesBefore(count, j + 16 * half);
      numerators[half] = _mm512_maskz_mov_ps(
          mask, TwoToTheSixteen(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(mask, scores + j + 16 * half), log2_e, shift)));
      totals[half] = _mm512_add_ps(totals[half], numerators[half]);
    }
    _mm512_storeu_si512(weights + j, (__m512i)_mm512_cvtne2ps_pbh(numerators[1], numerators[0]));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(totals[0], totals[1]));
}

// sums[r, c] for row tiles of 16 rows × every panel of 16 columns, two panels at a time.
void MultiplyPanels(int64_t row_tiles, int64_t panels, const uint16_t* input, int64_t lda, const uint16_t* packed,
                    int64_t panel_elements, int64_t depth_tiles, float* sums, int64_t ldc) {
  for (int64_t panel = 0; panel < panels; panel += 2) {
    MultiplyAmxTiles(row_tiles, std::min<int64_t>(2, panels - panel), input, lda, packed + panel * panel_elements,
                     panel_elements, depth_tiles, sums + panel * kPanel, ldc);
  }
}

}  // namespace

bool AmxAttentionApplies(const ops::AttentionOptions& options) {
  return options.position_bias == nullptr && options.disentangled_bias == nullptr && options.alibi == nullptr &&
         !options.causal && options.window <= 0 && options.softcap <= 0.0f;
}

void AmxAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout, float scale,
                  Tensor& output) {
  const int64_t d = layout.head_dim;
  const int64_t row_size = layout.row_size();
  const int64_t group = layout.num_heads / layout.num_kv_heads;
  const int64_t output_row = layout.num_heads * d;
  const int64_t depth = WholeTiles(d);  // the head dimension in whole tiles
  const int32_t* bounds = cu_seqlens.data<int32_t>();
  const float* data = qkv.data<float>();
  float* out = output.data<float>();
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  const int64_t pairs = sequences * layout.num_kv_heads;
  const int threads = qkv.dim(0) * row_size > kParallelElements ? LoopThreads() : 1;
  const int64_t query_blocks = QueryBlocks(pairs, threads, true);
  const auto attend = [&](int64_t item) {
    const auto [s, kv_head, begin, length, first_query, end_query] =
        ItemOf(item, query_blocks, layout.num_kv_heads, bounds, kBlockRows);
    if (first_query >= end_query) return;
    LoadAmxTileConfig();
    thread_local Scratch scratch;
    const int64_t key_panels = (length + kPanel - 1) / kPanel;
    const int64_t key_depth = WholeTiles(length);  // keys in whole tiles: the second product's depth
    const int64_t value_panels = (d + kPanel - 1) / kPanel;
    const int64_t score_stride = key_panels * kPanel;
    uint16_t* keys = Aligned(scratch.keys, key_panels * kPanel * depth);
    uint16_t* values = Aligned(scratch.values, value_panels * kPanel * key_depth);
    uint16_t* queries = Aligned(scratch.queries, kBlockRows * depth);
    uint16_t* weights = Aligned(scratch.weights, kBlockRows * key_depth);
    float* scores = Aligned(scratch.scores, kBlockRows * score_stride);
    float* sums = Aligned(scratch.sums, kBlockRows * value_panels * kPanel);
    const float* sequence = data + begin * row_size;
    PackBFloat16PairPanels(sequence + (layout.num_heads + kv_head) * d, row_size, length, d, depth / 2, key_panels,
                           keys);
    PackValues(sequence + (layout.num_heads + layout.num_kv_heads + kv_head) * d, row_size, length, d, key_depth / 2,
               values);
    for (int64_t head = kv_head * group; head < (kv_head + 1) * group; ++head) {
      for (int64_t first = first_query; first < end_query; first += kBlockRows) {
        const int64_t rows = std::min(kBlockRows, end_query - first);
        const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
        PackQueries(sequence + first * row_size + head * d, row_size, rows, d, scale, depth, queries);
        MultiplyPanels(row_tiles, key_panels, queries, depth, keys, kPanel * depth, depth / kTileDepth, scores,
                       score_stride);
        float inverse_sums[kBlockRows];
        for (int64_t r = 0; r < row_tiles * kTileRows; ++r) {
          uint16_t* row_weights = weights + r * key_depth;
          if (r >= rows) {
            std::memset(row_weights, 0, key_depth * sizeof(uint16_t));
            continue;
          }
          inverse_sums[r] = 1.0f / SoftmaxWeights(scores + r * score_stride, length, key_depth, row_weights);
        }
        const int64_t sums_stride = value_panels * kPanel;
        MultiplyPanels(row_tiles, value_panels, weights, key_depth, values, kPanel * key_depth,
                       key_depth / kTileDepth, sums, sums_stride);
        for (int64_t r = 0; r < rows; ++r) {
          float* target = out + (begin + first + r) * output_row + head * d;
          ScaledCopy(inverse_sums[r], sums + r * sums_stride, target, d);
        }
      }
    }
  };
  ParallelFor(pairs * query_blocks, attend, threads);
}

}  // namespace stamen::engine::cpu
