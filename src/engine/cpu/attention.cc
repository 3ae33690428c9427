// Ragged attention on the CPU, written as two small matrix products per block of queries.
// For each sequence and key/value head, the head's keys are packed into panels of 16 keys
// ([panel][d][16], contiguous: one 64-byte line holds one dimension of 16 keys, and a panel is
// read front to back) and its values copied contiguous ([L, d]). Queries then go in tiles of
// 6: the tile's scores against every panel (6 × 16 sums held in 12 registers while the head
// dimension is walked), a max-subtracted softmax with a vectorised exp, and the weighted sum
// of values (6 rows × 16 columns in registers while the keys are walked). Cost is O(L² · d) per
// head, without padding: sequences are attended one by one.
//
// MPNet's relative position bias and ALiBi (JinaBERT) are one value per head and offset j − i,
// tabulated per head before its queries are scored.
//
// Gemma 2's logit soft-capping squashes each visible score by cap·tanh(s / cap) just before the
// softmax, eight at a time (vector_activation.h's tanh).
//
// DeBERTa's disentangled terms reuse the score tile: the rows of the position keys a sequence
// reaches are packed into panels like keys, so the tile's queries score against them in the same
// pass (c2p, [6, rows]); for p2c the sequence's keys score against the packed position queries
// once per head ([L, rows]). Each score then adds the entry of its relative position's row
// (p2c key by key across the tile, so each key's row is read once per tile).
//
// Why panels: the previous layout (keys transposed to [d, L]) put the d lines a pass reads a
// whole key row apart; at L = 512 that stride maps them onto two L1 sets, and every pass
// missed L1. With the accumulators kept in registers (WeightedSumTile), the kernel runs at
// 2.2–2.5× the previous one's rate (docs/BENCHMARKS.md, "Attention kernel").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cpu/amx_attention.h"
#include "engine/cpu/attention_items.h"
#include "engine/cpu/cpu_path.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/panel_tile.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vector_activation.h"
#include "engine/cpu/vector_math.h"

namespace stamen::engine::cpu {
namespace {

constexpr int64_t kQueryTile = 6;  // 6 × 2 accumulators + 2 loaded + 1 broadcast = 15 of 16 registers
constexpr int64_t kKeyPanel = kPanelColumns;
// Heads are worth splitting between threads from this many elements of the fused QKV (one
// 16-token MiniLM step has 18,432): the pool's workers are usually spinning already, so a
// loop costs a microsecond or two (thread_pool.h), and all-MiniLM-L6-v2 at 48 tokens ran 5%
// faster with its heads split than with the old OpenMP threshold of 65,536.
constexpr int64_t kParallelElements = 4096;

// Reused across calls (one per thread): grows to the longest sequence seen, then never
// allocates again.
struct AttentionScratch {
  std::vector<float> keys;     // [panels][d][kKeyPanel], zero keys past the sequence's end
  std::vector<float> values;   // [L, d]
  std::vector<float> scores;   // [kQueryTile][panels · kKeyPanel]
  std::vector<float> queries;  // [kQueryTile][d], scaled; zero rows past the tile's last query
  std::vector<int32_t> buckets;  // [2L − 1] relative position buckets (with a position bias)
  std::vector<float> bias;       // [2L − 1] one head's bias (or ALiBi term) per relative position
  // DeBERTa's disentangled bias, R = the position rows the sequence reaches (≤ 2L − 1):
  std::vector<int32_t> position_rows;       // [2L − 1] projections row of each offset i − j, minus the first
  std::vector<float> position_keys;         // [panels(R)][d][kKeyPanel] one head's position keys (c2p)
  std::vector<float> position_queries;      // the same for its position queries (p2c)
  std::vector<float> query_position_scores;  // [kQueryTile][panels(R) · kKeyPanel]: scaled q · position key
  std::vector<float> key_position_scores;    // [L rounded up to kQueryTile][panels(R) · kKeyPanel]: scaled k · position query
};

AttentionScratch& Scratch() {
  thread_local AttentionScratch scratch;
  return scratch;
}

template <typename T>
T* Reserve(std::vector<T>& buffer, int64_t size) {
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(size);
  return buffer.data();
}

// ---- AVX-512 variants (cpu_path.h), with the same tile of queries: each panel step of 16 keys
// is one zmm, so a pass holds four panels' sums (24 registers) where the AVX2 tile holds one.
// Like the small-m GEMM's, these carry STAMEN_AVX512_TARGET (cpu_path.h). They repeat the
// AVX2 loops at twice the width rather than share a template with them: the attribute would
// reach the AVX2 instances too, and an AVX2 machine must never run code built for AVX-512.

// ScoreTile's product for kPanels panels from `panel` on.
template <int kPanels>
[[STAMEN_AVX512_TARGET]] void WideScorePanels(const float* queries, const float* panel, int64_t d, int64_t stride,
                                        float* scores) {
  __m512 sums[kPanels][kQueryTile];
#pragma GCC unroll 4
  for (int p = 0; p < kPanels; ++p) {
#pragma GCC unroll 6
    for (int r = 0; r < kQueryTile; ++r) sums[p][r] = _mm512_setzero_ps();
  }
  for (int64_t t = 0; t < d; ++t) {
    __m512 step[kPanels];
#pragma GCC unroll 4
    for (int p = 0; p < kPanels; ++p) step[p] = _mm512_loadu_ps(panel + (p * d + t) * kKeyPanel);
#pragma GCC unroll 6
    for (int r = 0; r < kQueryTile; ++r) {
      const __m512 query = _mm512_set1_ps(queries[r * d + t]);
#pragma GCC unroll 4
      for (int p = 0; p < kPanels; ++p) sums[p][r] = _mm512_fmadd_ps(query, step[p], sums[p][r]);
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < kPanels; ++p) {
#pragma GCC unroll 6
    for (int r = 0; r < kQueryTile; ++r) _mm512_storeu_ps(scores + r * stride + p * kKeyPanel, sums[p][r]);
  }
}

[[STAMEN_AVX512_TARGET]] void WideScoreTile(const float* queries, const float* keys, int64_t d, int64_t panels,
                                      int64_t stride, float* scores) {
  int64_t p = 0;
  for (; p + 4 <= panels; p += 4) WideScorePanels<4>(queries, keys + p * d * kKeyPanel, d, stride, scores + p * kKeyPanel);
  for (; p < panels; ++p) WideScorePanels<1>(queries, keys + p * d * kKeyPanel, d, stride, scores + p * kKeyPanel);
}

// WeightedSumTile with kVectors zmm of 16 columns each.
template <int kVectors>
[[STAMEN_AVX512_TARGET]] void WideWeightedSumTile(const float* p, int64_t p_stride, const float* values, int64_t d,
                                            int64_t count, const float* inverse, int64_t rows, float* out,
                                            int64_t out_stride) {
  __m512 sums[kQueryTile][kVectors];
#pragma GCC unroll 6
  for (int r = 0; r < kQueryTile; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < count; ++j) {
    __m512 value[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) value[v] = _mm512_loadu_ps(values + j * d + 16 * v);
#pragma GCC unroll 6
    for (int r = 0; r < kQueryTile; ++r) {
      const __m512 weight = _mm512_set1_ps(p[r * p_stride + j]);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm512_fmadd_ps(weight, value[v], sums[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kQueryTile; ++r) {
    if (r >= rows) break;
    const __m512 scale = _mm512_set1_ps(inverse[r]);
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) _mm512_storeu_ps(out + r * out_stride + 16 * v, _mm512_mul_ps(scale, sums[r][v]));
  }
}

// WeightedSum's columns that whole zmm tiles cover (a multiple of 16); returns how many.
[[STAMEN_AVX512_TARGET]] int64_t WideWeightedSum(const float* p, int64_t p_stride, const float* values, int64_t d,
                                          int64_t count, const float* inverse, int64_t rows, float* out,
                                          int64_t out_stride) {
  int64_t c = 0;
  for (; c + 64 <= d; c += 64) WideWeightedSumTile<4>(p, p_stride, values + c, d, count, inverse, rows, out + c, out_stride);
  for (; c + 32 <= d; c += 32) WideWeightedSumTile<2>(p, p_stride, values + c, d, count, inverse, rows, out + c, out_stride);
  for (; c + 16 <= d; c += 16) WideWeightedSumTile<1>(p, p_stride, values + c, d, count, inverse, rows, out + c, out_stride);
  return c;
}

// scores[r, p·16 + c] = queries[r, :] · key(p·16 + c) for every r < kQueryTile, panel p < panels.
void ScoreTile(const float* queries, const float* keys, int64_t d, int64_t panels, int64_t stride, float* scores) {
  if (DetectCpuPath().avx512) return WideScoreTile(queries, keys, d, panels, stride, scores);
#if defined(__AVX2__) && defined(__FMA__)
  for (int64_t p = 0; p < panels; ++p) {
    const float* panel = keys + p * d * kKeyPanel;
    __m256 low[kQueryTile], high[kQueryTile];
    MultiplyPanel<kQueryTile>(queries, d, panel, d, low, high);
#pragma GCC unroll 6
    for (int r = 0; r < kQueryTile; ++r) {
      _mm256_storeu_ps(scores + r * stride + p * kKeyPanel, low[r]);
      _mm256_storeu_ps(scores + r * stride + p * kKeyPanel + 8, high[r]);
    }
  }
#else
  for (int64_t r = 0; r < kQueryTile; ++r) {
    for (int64_t j = 0; j < panels * kKeyPanel; ++j) {
      const float* panel = keys + (j / kKeyPanel) * d * kKeyPanel + j % kKeyPanel;
      float sum = 0.0f;
      for (int64_t t = 0; t < d; ++t) sum += queries[r * d + t] * panel[t * kKeyPanel];
      scores[r * stride + j] = sum;
    }
  }
#endif
}

#if defined(__AVX2__) && defined(__FMA__)
// out[r, 0 : 8·kVectors] = inverse[r] · Σ_{j < count} p[r, j] · values[j, same columns] for
// r < rows; all kQueryTile rows accumulate in registers (rows past `rows` hold zeros in p).
template <int kVectors>
void WeightedSumTile(const float* p, int64_t p_stride, const float* values, int64_t d, int64_t count,
                     const float* inverse, int64_t rows, float* out, int64_t out_stride) {
  // Every loop over r and v is unrolled in full (also the last one, whose bound `rows` is
  // tested inside): only constant indices let the compiler keep `sums` in registers. With one
  // loop left rolled, GCC stored all 12 accumulators to the stack on every key, 2.5× slower.
  __m256 sums[kQueryTile][kVectors];
#pragma GCC unroll 6
  for (int r = 0; r < kQueryTile; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm256_setzero_ps();
  }
  for (int64_t j = 0; j < count; ++j) {
    __m256 value[kVectors];
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) value[v] = _mm256_loadu_ps(values + j * d + 8 * v);
#pragma GCC unroll 6
    for (int r = 0; r < kQueryTile; ++r) {
      const __m256 weight = _mm256_broadcast_ss(p + r * p_stride + j);
#pragma GCC unroll 2
      for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm256_fmadd_ps(weight, value[v], sums[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kQueryTile; ++r) {
    if (r >= rows) break;
    const __m256 scale = _mm256_set1_ps(inverse[r]);
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(out + r * out_stride + 8 * v, _mm256_mul_ps(scale, sums[r][v]));
  }
}
#endif

// out[r, :] = inverse[r] · Σ_{j < count} p[r, j] · values[j, :] for r < rows.
void WeightedSum(const float* p, int64_t p_stride, const float* values, int64_t d, int64_t count,
                 const float* inverse, int64_t rows, float* out, int64_t out_stride) {
  int64_t c = 0;
  if (DetectCpuPath().avx512) c = WideWeightedSum(p, p_stride, values, d, count, inverse, rows, out, out_stride);
#if defined(__AVX2__) && defined(__FMA__)
  for (; c + 16 <= d; c += 16) WeightedSumTile<2>(p, p_stride, values + c, d, count, inverse, rows, out + c, out_stride);
  for (; c + 8 <= d; c += 8) WeightedSumTile<1>(p, p_stride, values + c, d, count, inverse, rows, out + c, out_stride);
#endif
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t column = c; column < d; ++column) {
      float sum = 0.0f;
      for (int64_t j = 0; j < count; ++j) sum += p[r * p_stride + j] * values[j * d + column];
      out[r * out_stride + column] = inverse[r] * sum;
    }
  }
}

// A numerator below e^kSmallestShift of the row's largest (1) is 0: nothing a float sum of at
// least 1 can hold, and its products with the values would be denormals, which cost a microcode
// assist each on Intel cores. ALiBi rows (JinaBERT) reach e^−255: without this the weighted sum
// took 14% of a 512-token jina-embeddings-v2-base-en step instead of 3%.
constexpr float kSmallestShift = -64.0f;

// scores[0, n) ← exp(scores − max) (0 below e^kSmallestShift), returning their sum.
float SoftmaxNumerators(float* scores, int64_t n) {
  float maximum = -INFINITY;
  int64_t j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  __m256 maxima = _mm256_set1_ps(-INFINITY);
  for (; j + 8 <= n; j += 8) maxima = _mm256_max_ps(maxima, _mm256_loadu_ps(scores + j));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, maxima);
  for (float lane : lanes) maximum = std::max(maximum, lane);
#endif
  for (; j < n; ++j) maximum = std::max(maximum, scores[j]);
  j = 0;
  float sum = 0.0f;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 shift = _mm256_set1_ps(maximum);
  const __m256 smallest = _mm256_set1_ps(kSmallestShift);
  __m256 total = _mm256_setzero_ps();
  for (; j + 8 <= n; j += 8) {
    const __m256 shifted = _mm256_sub_ps(_mm256_loadu_ps(scores + j), shift);
    const __m256 e = _mm256_and_ps(Exp(shifted), _mm256_cmp_ps(shifted, smallest, _CMP_GE_OQ));
    _mm256_storeu_ps(scores + j, e);
    total = _mm256_add_ps(total, e);
  }
  _mm256_store_ps(lanes, total);
  for (float lane : lanes) sum += lane;
#endif
  for (; j < n; ++j) {
    const float shifted = scores[j] - maximum;
    scores[j] = shifted >= kSmallestShift ? std::exp(shifted) : 0.0f;
    sum += scores[j];
  }
  return sum;
}

// scores[0, n) ← cap·tanh(scores / cap): Gemma 2's attention logit soft-capping, on the scaled
// scores a query sees, before their softmax (transformers' eager_attention_forward).
void SoftCap(float* scores, int64_t n, float cap) {
  const float inverse = 1.0f / cap;
  int64_t j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 scale_in = _mm256_set1_ps(inverse), scale_out = _mm256_set1_ps(cap);
  for (; j + 8 <= n; j += 8) {
    const __m256 capped = TanhEight(_mm256_mul_ps(_mm256_loadu_ps(scores + j), scale_in));
    _mm256_storeu_ps(scores + j, _mm256_mul_ps(capped, scale_out));
  }
#endif
  for (; j < n; ++j) scores[j] = cap * std::tanh(scores[j] * inverse);
}

// Packs keys [length, d] (rows `row_size` apart) into zero-padded panels of kKeyPanel keys.
void PackKeys(const float* keys, int64_t row_size, int64_t length, int64_t d, float* packed) {
  const int64_t panels = (length + kKeyPanel - 1) / kKeyPanel;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = packed + p * d * kKeyPanel;
    const int64_t count = std::min(kKeyPanel, length - p * kKeyPanel);
    for (int64_t c = 0; c < count; ++c) {
      const float* key = keys + (p * kKeyPanel + c) * row_size;
      for (int64_t t = 0; t < d; ++t) panel[t * kKeyPanel + c] = key[t];
    }
    for (int64_t t = 0; t < d; ++t) std::fill(panel + t * kKeyPanel + count, panel + (t + 1) * kKeyPanel, 0.0f);
  }
}

// A 64-byte aligned block of `size` floats in `buffer`: a panel step of 16 keys then fills one
// cache line (and is read with aligned loads on AVX2), but operator new only promises 16
// bytes: 16 floats of slack let the start be rounded up.
float* ReserveAligned(std::vector<float>& buffer, int64_t size) {
  float* data = Reserve(buffer, size + 16);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(data) + 63) & ~uintptr_t{63});
}

// Query `i` (of a sequence of `length`) sees keys [begin, end): the causal and window limits of
// ops::AttentionOptions.
struct KeyRange {
  int64_t begin;
  int64_t end;
};

// `keys` (≤ length) limits every query to the sequence's leading keys (key_lengths); a window
// that would leave a query none of them keeps the last one, so that its softmax has a term.
KeyRange VisibleKeys(int64_t i, int64_t length, bool causal, int64_t window, int64_t keys) {
  KeyRange range{0, causal ? i + 1 : length};
  if (window > 0) {
    range.begin = std::max<int64_t>(0, i - window + 1);
    range.end = std::min(range.end, i + window);
  }
  range.end = std::min(range.end, keys);
  range.begin = std::min(range.begin, range.end - 1);
  return range;
}

}  // namespace

Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout,
                 const ops::AttentionOptions& options, Tensor& output) {
  const int64_t d = layout.head_dim;
  const int64_t row_size = layout.row_size();
  const int64_t group = layout.num_heads / layout.num_kv_heads;
  const int64_t output_row = layout.num_heads * d;
  const float scale = options.scale > 0.0f ? options.scale : 1.0f / std::sqrt(static_cast<float>(d));
  if (CurrentMatrixPrecision() == MatrixPrecision::kBFloat16 && DetectCpuPath().amx && AmxAttentionApplies(options) &&
      options.key_lengths == nullptr) {
    AmxAttention(qkv, cu_seqlens, layout, scale, output);
    return Status();
  }
  const bool causal = options.causal;
  const int64_t window = options.window;
  const float softcap = options.softcap;  // ops::Attention keeps it apart from the position biases
  const ops::RelativePositionBias* position_bias = options.position_bias;
  const ops::DisentangledPositionBias* disentangled = options.disentangled_bias;
  const ops::AlibiBias* alibi = options.alibi;
  const int32_t* bounds = cu_seqlens.data<int32_t>();
  const int32_t* key_lengths = options.key_lengths != nullptr ? options.key_lengths->data<int32_t>() : nullptr;
  const float* data = qkv.data<float>();

  // One work item per (sequence, key/value head, block of queries): attention_items.h. The
  // queries are not split with DeBERTa's position-to-content scores, which each item computes
  // for all of its keys.
  const int threads = qkv.dim(0) * row_size > kParallelElements ? LoopThreads() : 1;
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  const int64_t pairs = sequences * layout.num_kv_heads;
  const int64_t query_blocks =
      QueryBlocks(pairs, threads, disentangled == nullptr || disentangled->query_column < 0);
  const int64_t items = pairs * query_blocks;
  const auto attend = [&](int64_t item) {
    const auto [s, kv_head, begin, length, first_query, end_query] =
        ItemOf(item, query_blocks, layout.num_kv_heads, bounds, kQueryTile);
    if (first_query >= end_query) return;
    const int64_t attended = key_lengths != nullptr ? key_lengths[s] : length;
    const int64_t panels = (length + kKeyPanel - 1) / kKeyPanel;
    const int64_t stride = panels * kKeyPanel;
    AttentionScratch& scratch = Scratch();
    float* keys = ReserveAligned(scratch.keys, stride * d);
    float* values = Reserve(scratch.values, length * d);
    float* scores = Reserve(scratch.scores, kQueryTile * stride);
    float* queries = Reserve(scratch.queries, kQueryTile * d);
    const float* sequence = data + begin * row_size;
    PackKeys(sequence + (layout.num_heads + kv_head) * d, row_size, length, d, keys);
    const int64_t value_offset = (layout.num_heads + layout.num_kv_heads + kv_head) * d;
    for (int64_t j = 0; j < length; ++j) std::memcpy(values + j * d, sequence + j * row_size + value_offset, d * sizeof(float));
    // With a position bias, the bucket of every offset j − i ∈ [−(length − 1), length − 1],
    // at index j − i + length − 1; each head then reads its bias of each offset once.
    int32_t* buckets = nullptr;
    float* bias_by_offset = nullptr;
    if (alibi != nullptr) bias_by_offset = Reserve(scratch.bias, 2 * length - 1);
    if (position_bias != nullptr) {
      buckets = Reserve(scratch.buckets, 2 * length - 1);
      bias_by_offset = Reserve(scratch.bias, 2 * length - 1);
      for (int64_t offset = 0; offset < 2 * length - 1; ++offset) {
        buckets[offset] =
            ops::RelativePositionBucket(offset - (length - 1), position_bias->num_buckets, position_bias->max_distance);
      }
    }

    // With a disentangled bias, the projections row of every offset i − j (at i − j + length − 1),
    // counted from the first row any pair reaches: rows grow with i − j, so they span
    // [row of −(length − 1), row of length − 1].
    int32_t* position_rows = nullptr;
    int64_t first_row = 0, row_stride = 0, row_panels = 0;
    float* position_keys = nullptr;
    float* position_queries = nullptr;
    float* query_position_scores = nullptr;
    float* key_position_scores = nullptr;
    const bool content_to_position = disentangled != nullptr && disentangled->key_column >= 0;
    const bool position_to_content = disentangled != nullptr && disentangled->query_column >= 0;
    if (disentangled != nullptr) {
      position_rows = Reserve(scratch.position_rows, 2 * length - 1);
      first_row = ops::DisentangledPositionIndex(-(length - 1), *disentangled);
      for (int64_t offset = 0; offset < 2 * length - 1; ++offset) {
        position_rows[offset] =
            static_cast<int32_t>(ops::DisentangledPositionIndex(offset - (length - 1), *disentangled) - first_row);
      }
      const int64_t row_count = position_rows[2 * length - 2] + 1;
      row_panels = (row_count + kKeyPanel - 1) / kKeyPanel;
      row_stride = row_panels * kKeyPanel;
      if (content_to_position) {
        position_keys = ReserveAligned(scratch.position_keys, row_stride * d);
        query_position_scores = Reserve(scratch.query_position_scores, kQueryTile * row_stride);
      }
      if (position_to_content) {
        position_queries = ReserveAligned(scratch.position_queries, row_stride * d);
        const int64_t key_rows = (length + kQueryTile - 1) / kQueryTile * kQueryTile;
        key_position_scores = Reserve(scratch.key_position_scores, key_rows * row_stride);
      }
    }
    const int64_t key_offset = (layout.num_heads + kv_head) * d;

    for (int64_t head = kv_head * group; head < (kv_head + 1) * group; ++head) {
      if (disentangled != nullptr) {
        const int64_t columns = disentangled->projections.dim(1);
        const float* reached = disentangled->projections.data<float>() + first_row * columns;
        const int64_t row_count = position_rows[2 * length - 2] + 1;
        if (content_to_position) {
          PackKeys(reached + disentangled->key_column + head * d, columns, row_count, d, position_keys);
        }
        if (position_to_content) {
          // key_position_scores[j, row] = scale · k_j · position_query[row], keys taken as queries.
          PackKeys(reached + disentangled->query_column + head * d, columns, row_count, d, position_queries);
          for (int64_t key = 0; key < length; key += kQueryTile) {
            const int64_t rows = std::min(kQueryTile, length - key);
            for (int64_t r = 0; r < rows; ++r) ScaledCopy(scale, sequence + (key + r) * row_size + key_offset, queries + r * d, d);
            std::fill(queries + rows * d, queries + kQueryTile * d, 0.0f);
            ScoreTile(queries, position_queries, d, row_panels, row_stride, key_position_scores + key * row_stride);
          }
        }
      }
      if (position_bias != nullptr) {
        const float* table = position_bias->table.data<float>();
        for (int64_t offset = 0; offset < 2 * length - 1; ++offset) {
          bias_by_offset[offset] = table[buckets[offset] * layout.num_heads + head];
        }
      }
      if (alibi != nullptr) {
        // ALiBi: −slope_h · |j − i|, the same row of offsets as a position bias.
        const float slope = alibi->slopes.data<float>()[head];
        for (int64_t offset = 0; offset < 2 * length - 1; ++offset) {
          bias_by_offset[offset] = -slope * static_cast<float>(std::abs(offset - (length - 1)));
        }
      }
      for (int64_t first = first_query; first < end_query; first += kQueryTile) {
        const int64_t rows = std::min(kQueryTile, end_query - first);
        for (int64_t r = 0; r < rows; ++r) ScaledCopy(scale, sequence + (first + r) * row_size + head * d, queries + r * d, d);
        std::fill(queries + rows * d, queries + kQueryTile * d, 0.0f);
        // Keys any query of the tile sees: from the first query's first key (scored from the
        // start of its panel) to the last query's last key.
        const int64_t seen_begin = VisibleKeys(first, length, causal, window, attended).begin;
        const int64_t seen_end = VisibleKeys(first + rows - 1, length, causal, window, attended).end;
        const int64_t first_panel = seen_begin / kKeyPanel;
        ScoreTile(queries, keys + first_panel * d * kKeyPanel, d, (seen_end + kKeyPanel - 1) / kKeyPanel - first_panel,
                  stride, scores + first_panel * kKeyPanel);
        if (content_to_position) {
          ScoreTile(queries, position_keys, d, row_panels, row_stride, query_position_scores);
        }
        if (position_to_content) {
          // Key by key, the tile's queries read neighbouring entries of the key's row (their
          // offsets differ by one), so each row is read once per tile instead of a line per
          // score. Scores outside a query's visible keys are overwritten before the sum.
          for (int64_t j = seen_begin; j < seen_end; ++j) {
            const float* by_row = key_position_scores + j * row_stride;
            const int32_t* row_of = position_rows + (length - 1) + first - j;  // row_of[r]: offset first + r − j
            for (int64_t r = 0; r < rows; ++r) scores[r * stride + j] += by_row[row_of[r]];
          }
        }
        float inverse_sums[kQueryTile];
        for (int64_t r = 0; r < kQueryTile; ++r) {
          float* row_scores = scores + r * stride;
          KeyRange visible{seen_begin, seen_begin};
          if (r < rows) {
            visible = VisibleKeys(first + r, length, causal, window, attended);
            if (bias_by_offset != nullptr) {
              const float* bias = bias_by_offset + (length - 1) - (first + r);  // bias[j] is offset j − i
              for (int64_t j = visible.begin; j < visible.end; ++j) row_scores[j] += bias[j];
            }
            if (content_to_position) {
              const int32_t* row_of = position_rows + (length - 1) + (first + r);  // row_of[−j]: offset i − j
              const float* by_row = query_position_scores + r * row_stride;
              for (int64_t j = visible.begin; j < visible.end; ++j) row_scores[j] += by_row[row_of[-j]];
            }
            if (softcap > 0.0f) SoftCap(row_scores + visible.begin, visible.end - visible.begin, softcap);
            inverse_sums[r] = 1.0f / SoftmaxNumerators(row_scores + visible.begin, visible.end - visible.begin);
          }
          std::fill(row_scores + seen_begin, row_scores + visible.begin, 0.0f);
          std::fill(row_scores + visible.end, row_scores + seen_end, 0.0f);
        }
        WeightedSum(scores + seen_begin, stride, values + seen_begin * d, d, seen_end - seen_begin, inverse_sums, rows,
                    output.data<float>() + (begin + first) * output_row + head * d, output_row);
      }
    }
  };
  ParallelFor(items, attend, threads);
  return Status();
}

}  // namespace stamen::engine::cpu
