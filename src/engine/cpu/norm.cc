// LayerNorm and RMSNorm on the CPU, rows split between threads. Statistics accumulate in
// double: it costs little next to the gemms and keeps long rows (hidden 1024+) accurate to
// fp32 rounding.
#include <algorithm>
#include <cmath>

#include "engine/cpu/kernels.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vector_math.h"

namespace stamen::engine::cpu {
namespace {

int64_t RoundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Rows of a [rows, n] tensor are worth splitting between threads from this many elements
// (MiniLM's 48-token step: 18,432), in tasks of about kTaskElements, as many for each thread.
constexpr int64_t kParallelElements = 16384;
constexpr int64_t kTaskElements = 8192;

// Calls row_body(r) for every row, the rows of a large enough tensor split between threads.
template <typename RowBody>
void ForEachRow(int64_t rows, int64_t n, const RowBody& row_body) {
  const int64_t threads = rows * n >= kParallelElements ? LoopThreads() : 1;
  const int64_t planned = RoundUp(std::max<int64_t>(1, (rows * n + kTaskElements - 1) / kTaskElements), threads);
  const int64_t rows_per_task = std::max<int64_t>(1, (rows + planned - 1) / planned);
  const int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  ParallelFor(
      tasks,
      [&](int64_t task) {
        const int64_t end = std::min(rows, (task + 1) * rows_per_task);
        for (int64_t r = task * rows_per_task; r < end; ++r) row_body(r);
      },
      static_cast<int>(threads));
}

// out[i] = (in[i] − shift) · scale · weight[i] (+ bias[i] when bias is not null).
void NormalizeRow(const float* in, float shift, float scale, const float* weight, const float* bias, int64_t n,
                  float* out) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 offset = _mm256_set1_ps(shift), factor = _mm256_set1_ps(scale);
  for (; i + 8 <= n; i += 8) {
    const __m256 scaled = _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(in + i), offset), factor),
                                        _mm256_loadu_ps(weight + i));
    _mm256_storeu_ps(out + i, bias ? _mm256_add_ps(scaled, _mm256_loadu_ps(bias + i)) : scaled);
  }
#endif
  for (; i < n; ++i) out[i] = (in[i] - shift) * scale * weight[i] + (bias ? bias[i] : 0.0f);
}

// out[i] = a[i] + b[i]; out may be a or b.
void Add(const float* a, const float* b, int64_t n, float* out) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
#endif
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// out = row / sqrt(mean(row²) + eps) · weight, or out += that with `accumulate`.
void RmsNormRow(const float* row, const float* weight, float eps, int64_t n, float* out, bool accumulate = false) {
  const double sum_squares = SumOfPowers<2>(row, 0.0, n);
  const float scale = static_cast<float>(1.0 / std::sqrt(sum_squares / n + eps));
  if (!accumulate) {
    NormalizeRow(row, 0.0f, scale, weight, nullptr, n, out);
    return;
  }
  // Elementwise after the sum, so out may alias row; the product rounds as NormalizeRow's does.
  for (int64_t i = 0; i < n; ++i) out[i] += row[i] * scale * weight[i];
}

// LayerNorm of one row: out = (x − mean) / sqrt(var + eps) · gamma + beta, x = in + residual
// (residual may be null); out may alias in or residual element by element.
void LayerNormRow(const float* in, const float* residual, const float* gamma, const float* beta, float eps, int64_t n,
                  float* out) {
  // Sum first, into the output row.
  if (residual != nullptr) {
    Add(in, residual, n, out);
  } else if (out != in) {
    std::copy(in, in + n, out);
  }
  const double mean = SumOfPowers<1>(out, 0.0, n) / n;
  const double sum_squares = SumOfPowers<2>(out, mean, n);
  const float inverse = static_cast<float>(1.0 / std::sqrt(sum_squares / n + eps));
  NormalizeRow(out, static_cast<float>(mean), inverse, gamma, beta, n, out);
}

}  // namespace

Status LayerNorm(const Tensor& input, const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
                 Tensor& output) {
  const int64_t rows = input.dim(0);
  const int64_t n = input.dim(1);
  const float* gamma_data = gamma.data<float>();
  const float* beta_data = beta.data<float>();  // null when empty: NormalizeRow adds no bias
  ForEachRow(rows, n, [&](int64_t r) {
    LayerNormRow(input.data<float>() + r * n, residual.empty() ? nullptr : residual.data<float>() + r * n, gamma_data,
                 beta_data, eps, n, output.data<float>() + r * n);
  });
  return Status();
}

Status RmsNorm(const Tensor& input, const Tensor& weight, float eps, Tensor& output, bool accumulate) {
  const int64_t rows = input.dim(0);
  const int64_t n = input.dim(1);
  ForEachRow(rows, n, [&](int64_t r) {
    RmsNormRow(input.data<float>() + r * n, weight.data<float>(), eps, n, output.data<float>() + r * n, accumulate);
  });
  return Status();
}

Status RmsNormHeads(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& query_weight, const Tensor& key_weight,
                    float eps) {
  const int64_t d = layout.head_dim;
  ForEachRow(qkv.dim(0), layout.row_size(), [&](int64_t t) {
    float* row = qkv.data<float>() + t * layout.row_size();
    for (int64_t h = 0; h < layout.num_heads + layout.num_kv_heads; ++h) {
      const float* weight = h < layout.num_heads ? query_weight.data<float>() : key_weight.data<float>();
      RmsNormRow(row + h * d, weight, eps, d, row + h * d);
    }
  });
  return Status();
}

Status LayerNormQueryKey(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& query_gamma, const Tensor& query_beta,
                         const Tensor& key_gamma, const Tensor& key_beta, float eps) {
  const int64_t query_size = layout.num_heads * layout.head_dim;
  const int64_t key_size = layout.num_kv_heads * layout.head_dim;
  ForEachRow(qkv.dim(0), layout.row_size(), [&](int64_t t) {
    float* query = qkv.data<float>() + t * layout.row_size();
    float* key = query + query_size;
    LayerNormRow(query, nullptr, query_gamma.data<float>(), query_beta.data<float>(), eps, query_size, query);
    LayerNormRow(key, nullptr, key_gamma.data<float>(), key_beta.data<float>(), eps, key_size, key);
  });
  return Status();
}

}  // namespace stamen::engine::cpu
