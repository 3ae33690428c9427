// LayerNorm and RMSNorm on the CPU, one row at a time. Statistics accumulate in double: it
// costs little next to the gemms and keeps long rows (hidden 1024+) accurate to fp32 rounding.
#include <cmath>

#include "engine/cpu/kernels.h"

namespace stamen::engine::cpu {
namespace {

// row = row / sqrt(mean(row²) + eps) · weight.
void RmsNormRow(const float* row, const float* weight, float eps, int64_t n, float* out) {
  double sum_squares = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(row[i]) * row[i];
  const float inverse = static_cast<float>(1.0 / std::sqrt(sum_squares / n + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = row[i] * inverse * weight[i];
}

}  // namespace

void LayerNorm(const Tensor& input, const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
               Tensor& output) {
  const int64_t rows = input.dim(0);
  const int64_t n = input.dim(1);
  const float* gamma_data = gamma.data<float>();
  const float* beta_data = beta.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = input.data<float>() + r * n;
    float* out = output.data<float>() + r * n;
    // Sum first, into the output row: output may alias input or residual element by element.
    if (!residual.empty()) {
      const float* add = residual.data<float>() + r * n;
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] + add[i];
    } else if (out != in) {
      for (int64_t i = 0; i < n; ++i) out[i] = in[i];
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += out[i];
    const double mean = sum / n;
    double sum_squares = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double centered = out[i] - mean;
      sum_squares += centered * centered;
    }
    const float inverse = static_cast<float>(1.0 / std::sqrt(sum_squares / n + eps));
    const float mean_f = static_cast<float>(mean);
    for (int64_t i = 0; i < n; ++i) out[i] = (out[i] - mean_f) * inverse * gamma_data[i] + beta_data[i];
  }
}

void RmsNorm(const Tensor& input, const Tensor& weight, float eps, Tensor& output) {
  const int64_t rows = input.dim(0);
  const int64_t n = input.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    RmsNormRow(input.data<float>() + r * n, weight.data<float>(), eps, n, output.data<float>() + r * n);
  }
}

void RmsNormHeads(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& query_weight, const Tensor& key_weight,
                  float eps) {
  const int64_t d = layout.head_dim;
  for (int64_t t = 0; t < qkv.dim(0); ++t) {
    float* row = qkv.data<float>() + t * layout.row_size();
    for (int64_t h = 0; h < layout.num_heads + layout.num_kv_heads; ++h) {
      const float* weight = h < layout.num_heads ? query_weight.data<float>() : key_weight.data<float>();
      RmsNormRow(row + h * d, weight, eps, d, row + h * d);
    }
  }
}

}  // namespace stamen::engine::cpu
