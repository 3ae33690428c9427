// Ragged attention on the CPU. For each sequence and key/value head, the head's keys are
// copied out of the packed qkv rows transposed ([d, L], so that one load covers 8 keys) and
// its values contiguous ([L, d]). Queries then go in blocks of 4: their scores against all
// keys as a small matrix product (each key vector is loaded once for the 4 queries), a
// max-subtracted softmax with a vectorised exp, and one axpy per key and query into the
// output. Cost is O(L² · d) per head, without padding: sequences are attended one by one.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/cpu/kernels.h"
#include "engine/cpu/vector_math.h"

namespace stamen::engine::cpu {
namespace {

constexpr int64_t kQueryBlock = 4;

// Reused across calls (one per thread): grows to the longest sequence seen, then never
// allocates again.
struct AttentionScratch {
  std::vector<float> keys;     // [d, padded length], transposed
  std::vector<float> values;   // [length, d]
  std::vector<float> scores;   // [kQueryBlock, padded length]
  std::vector<float> queries;  // [kQueryBlock, d], scaled
};

AttentionScratch& Scratch() {
  thread_local AttentionScratch scratch;
  return scratch;
}

// scores[r, j] = queries[r, :] · keys[:, j] for r < kQueryBlock and j < columns (a multiple of
// 8 within the padded key length `stride`). 16 keys × 4 queries per pass: each step over the
// head dimension loads two key vectors and four query scalars for eight FMAs.
void ScoreBlock(const float* queries, const float* keys, int64_t d, int64_t stride, int64_t columns, float* scores) {
  int64_t j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; j + 16 <= columns; j += 16) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps(), b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
    for (int64_t t = 0; t < d; ++t) {
      const __m256 low = _mm256_loadu_ps(keys + t * stride + j);
      const __m256 high = _mm256_loadu_ps(keys + t * stride + j + 8);
      __m256 q = _mm256_broadcast_ss(queries + t);
      a0 = _mm256_fmadd_ps(q, low, a0);
      b0 = _mm256_fmadd_ps(q, high, b0);
      q = _mm256_broadcast_ss(queries + d + t);
      a1 = _mm256_fmadd_ps(q, low, a1);
      b1 = _mm256_fmadd_ps(q, high, b1);
      q = _mm256_broadcast_ss(queries + 2 * d + t);
      a2 = _mm256_fmadd_ps(q, low, a2);
      b2 = _mm256_fmadd_ps(q, high, b2);
      q = _mm256_broadcast_ss(queries + 3 * d + t);
      a3 = _mm256_fmadd_ps(q, low, a3);
      b3 = _mm256_fmadd_ps(q, high, b3);
    }
    _mm256_storeu_ps(scores + j, a0);
    _mm256_storeu_ps(scores + j + 8, b0);
    _mm256_storeu_ps(scores + stride + j, a1);
    _mm256_storeu_ps(scores + stride + j + 8, b1);
    _mm256_storeu_ps(scores + 2 * stride + j, a2);
    _mm256_storeu_ps(scores + 2 * stride + j + 8, b2);
    _mm256_storeu_ps(scores + 3 * stride + j, a3);
    _mm256_storeu_ps(scores + 3 * stride + j + 8, b3);
  }
  for (; j + 8 <= columns; j += 8) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int64_t t = 0; t < d; ++t) {
      const __m256 key = _mm256_loadu_ps(keys + t * stride + j);
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(queries + t), key, a0);
      a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(queries + d + t), key, a1);
      a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(queries + 2 * d + t), key, a2);
      a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(queries + 3 * d + t), key, a3);
    }
    _mm256_storeu_ps(scores + j, a0);
    _mm256_storeu_ps(scores + stride + j, a1);
    _mm256_storeu_ps(scores + 2 * stride + j, a2);
    _mm256_storeu_ps(scores + 3 * stride + j, a3);
  }
#endif
  for (int64_t r = 0; r < kQueryBlock; ++r) {
    for (int64_t k = j; k < columns; ++k) {
      float sum = 0.0f;
      for (int64_t t = 0; t < d; ++t) sum += queries[r * d + t] * keys[t * stride + k];
      scores[r * stride + k] = sum;
    }
  }
}

#if defined(__AVX2__) && defined(__FMA__)
// out_r[c·8 : c·8 + 8·kVectors] (r = 0, 1) = Σ_j p_r[j] · values[j, same columns]: the two
// rows' output slices stay in registers over all `count` keys.
template <int kVectors>
void WeightedSumPair(const float* p0, const float* p1, const float* values, int64_t d, int64_t count, float* out0,
                     float* out1) {
  __m256 first[kVectors], second[kVectors];
  for (int v = 0; v < kVectors; ++v) first[v] = second[v] = _mm256_setzero_ps();
  for (int64_t j = 0; j < count; ++j) {
    const __m256 w0 = _mm256_broadcast_ss(p0 + j);
    const __m256 w1 = _mm256_broadcast_ss(p1 + j);
    for (int v = 0; v < kVectors; ++v) {
      const __m256 value = _mm256_loadu_ps(values + j * d + 8 * v);
      first[v] = _mm256_fmadd_ps(w0, value, first[v]);
      second[v] = _mm256_fmadd_ps(w1, value, second[v]);
    }
  }
  for (int v = 0; v < kVectors; ++v) {
    _mm256_storeu_ps(out0 + 8 * v, first[v]);
    _mm256_storeu_ps(out1 + 8 * v, second[v]);
  }
}
#endif

// out_r = Σ_{j < count} p_r[j] · values[j, :] for two rows (p1/out1 may repeat p0/out0).
void WeightedSum(const float* p0, const float* p1, const float* values, int64_t d, int64_t count, float* out0,
                 float* out1) {
#if defined(__AVX2__) && defined(__FMA__)
  if (d % 8 == 0) {
    for (int64_t c = 0; c < d; c += 32) {
      switch (std::min<int64_t>(4, (d - c) / 8)) {
        case 4: WeightedSumPair<4>(p0, p1, values + c, d, count, out0 + c, out1 + c); break;
        case 3: WeightedSumPair<3>(p0, p1, values + c, d, count, out0 + c, out1 + c); break;
        case 2: WeightedSumPair<2>(p0, p1, values + c, d, count, out0 + c, out1 + c); break;
        default: WeightedSumPair<1>(p0, p1, values + c, d, count, out0 + c, out1 + c); break;
      }
    }
    return;
  }
#endif
  std::fill(out0, out0 + d, 0.0f);
  std::fill(out1, out1 + d, 0.0f);
  for (int64_t j = 0; j < count; ++j) {
    Axpy(p0[j], values + j * d, out0, d);
    if (out1 != out0) Axpy(p1[j], values + j * d, out1, d);
  }
}

// scores[0, n) ← exp(scores − max), returning their sum.
float SoftmaxNumerators(float* scores, int64_t n) {
  float maximum = -INFINITY;
  for (int64_t j = 0; j < n; ++j) maximum = std::max(maximum, scores[j]);
  int64_t j = 0;
  float sum = 0.0f;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 shift = _mm256_set1_ps(maximum);
  __m256 total = _mm256_setzero_ps();
  for (; j + 8 <= n; j += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(scores + j), shift));
    _mm256_storeu_ps(scores + j, e);
    total = _mm256_add_ps(total, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, total);
  for (float lane : lanes) sum += lane;
#endif
  for (; j < n; ++j) {
    scores[j] = std::exp(scores[j] - maximum);
    sum += scores[j];
  }
  return sum;
}

}  // namespace

void Attention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout, bool causal,
               Tensor& output) {
  const int64_t d = layout.head_dim;
  const int64_t row_size = layout.row_size();
  const int64_t group = layout.num_heads / layout.num_kv_heads;
  const int64_t output_row = layout.num_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int32_t* bounds = cu_seqlens.data<int32_t>();
  const float* data = qkv.data<float>();

  // One work item per (sequence, key/value head): items are independent, so threads split them.
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  const int64_t items = sequences * layout.num_kv_heads;
#pragma omp parallel for schedule(dynamic, 1) if (items > 1 && qkv.dim(0) * row_size > 65536)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t s = item / layout.num_kv_heads;
    const int64_t kv_head = item % layout.num_kv_heads;
    const int64_t begin = bounds[s];
    const int64_t length = bounds[s + 1] - begin;
    if (length == 0) continue;
    const int64_t stride = (length + 7) / 8 * 8;  // keys padded to whole vectors (zeros)
    AttentionScratch& scratch = Scratch();
    if (static_cast<int64_t>(scratch.keys.size()) < stride * d) {
      scratch.keys.resize(stride * d);
      scratch.values.resize(stride * d);
      scratch.scores.resize(kQueryBlock * stride);
    }
    if (static_cast<int64_t>(scratch.queries.size()) < kQueryBlock * d) scratch.queries.resize(kQueryBlock * d);
    float* keys = scratch.keys.data();
    float* values = scratch.values.data();
    float* scores = scratch.scores.data();
    float* queries = scratch.queries.data();
    const int64_t key_offset = (layout.num_heads + kv_head) * d;
    const int64_t value_offset = (layout.num_heads + layout.num_kv_heads + kv_head) * d;
    for (int64_t j = 0; j < length; ++j) {
      const float* row = data + (begin + j) * row_size;
      for (int64_t t = 0; t < d; ++t) keys[t * stride + j] = row[key_offset + t];
      std::memcpy(values + j * d, row + value_offset, d * sizeof(float));
    }
    for (int64_t t = 0; t < d; ++t) std::fill(keys + t * stride + length, keys + (t + 1) * stride, 0.0f);

    for (int64_t head = kv_head * group; head < (kv_head + 1) * group; ++head) {
      for (int64_t first = 0; first < length; first += kQueryBlock) {
        const int64_t rows = std::min(kQueryBlock, length - first);
        for (int64_t r = 0; r < rows; ++r) {
          const float* query = data + (begin + first + r) * row_size + head * d;
          for (int64_t t = 0; t < d; ++t) queries[r * d + t] = query[t] * scale;
        }
        std::fill(queries + rows * d, queries + kQueryBlock * d, 0.0f);
        // Keys any query of the block sees (causal: up to the block's last query).
        const int64_t seen = causal ? first + rows : length;
        ScoreBlock(queries, keys, d, stride, (seen + 7) / 8 * 8, scores);
        float inverse_sums[kQueryBlock];
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t visible = causal ? first + r + 1 : length;
          float* row_scores = scores + r * stride;
          inverse_sums[r] = 1.0f / SoftmaxNumerators(row_scores, visible);
          std::fill(row_scores + visible, row_scores + seen, 0.0f);
        }
        for (int64_t r = 0; r < rows; r += 2) {
          const int64_t pair = std::min<int64_t>(r + 1, rows - 1);  // the last row may go alone
          float* out0 = output.data<float>() + (begin + first + r) * output_row + head * d;
          float* out1 = output.data<float>() + (begin + first + pair) * output_row + head * d;
          WeightedSum(scores + r * stride, scores + pair * stride, values, d, seen, out0, out1);
          Scale(inverse_sums[r], out0, d);
          if (pair != r) Scale(inverse_sums[pair], out1, d);
        }
      }
    }
  }
}

}  // namespace stamen::engine::cpu
