// Rotary embedding on the CPU. Angles follow transformers' fp32 arithmetic (inverse
// frequencies and position · frequency in fp32), so tables match its cos/sin to rounding.
#include <cmath>

#include "engine/cpu/kernels.h"
#include "engine/ops/rope_frequency.h"

namespace stamen::engine::cpu {

Status RopeTable(const Tensor& positions, double base, Tensor& table, const ops::RopeScaling& scaling,
                 const Tensor& cu_seqlens) {
  const int64_t d = table.dim(1);
  const int64_t half = d / 2;
  // With boundaries (dynamic NTK), each token's sequence length picks its frequencies.
  const int32_t* bounds = cu_seqlens.empty() ? nullptr : cu_seqlens.data<int32_t>();
  int64_t sequence = 0, length = 0;
  for (int64_t t = 0; t < table.dim(0); ++t) {
    if (bounds != nullptr) {
      while (sequence + 2 < cu_seqlens.dim(0) && t >= bounds[sequence + 1]) ++sequence;
      length = bounds[sequence + 1] - bounds[sequence];
    }
    const float position = static_cast<float>(positions.data<int32_t>()[t]);
    float* row = table.data<float>() + t * d;
    for (int64_t i = 0; i < half; ++i) {
      const float inverse_frequency = ops::RopeInverseFrequency(i, d, static_cast<float>(base), scaling, length);
      const float angle = position * inverse_frequency;
      row[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      row[half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  return Status();
}

Status ApplyRope(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& table) {
  const int64_t d = layout.head_dim;
  // Partial rotary: the table covers the first `rotated` dimensions of each head; the rest stay.
  const int64_t rotated = table.dim(1);
  const int64_t half = rotated / 2;
  for (int64_t t = 0; t < qkv.dim(0); ++t) {
    const float* cos = table.data<float>() + t * rotated;
    const float* sin = cos + half;
    float* row = qkv.data<float>() + t * layout.row_size();
    // x' = x·cos + rotate_half(x)·sin, rotate_half(x) = (-x[half:], x[:half]).
    for (int64_t h = 0; h < layout.num_heads + layout.num_kv_heads; ++h) {
      float* x = row + h * d;
      for (int64_t i = 0; i < half; ++i) {
        const float first = x[i];
        const float second = x[half + i];
        x[i] = first * cos[i] - second * sin[i];
        x[half + i] = second * cos[i] + first * sin[i];
      }
    }
  }
  return Status();
}

}  // namespace stamen::engine::cpu
