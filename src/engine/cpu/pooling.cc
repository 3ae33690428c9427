// Pooling and L2 normalisation on the CPU.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/kernels.h"

namespace stamen::engine::cpu {

Status Pool(const Tensor& hidden, const Tensor& cu_seqlens, ops::PoolingMode mode, Tensor& output) {
  const int64_t n = hidden.dim(1);
  const int64_t width = output.dim(1);
  const int32_t* bounds = cu_seqlens.data<int32_t>();
  for (int64_t s = 0; s < output.dim(0); ++s) {
    const int64_t begin = bounds[s];
    const int64_t end = bounds[s + 1];
    float* out = output.data<float>() + s * width;
    const float* first = hidden.data<float>() + begin * n;
    switch (mode) {
      case ops::PoolingMode::kCls:
        std::memcpy(out, first, width * sizeof(float));
        break;
      case ops::PoolingMode::kLastToken:
        std::memcpy(out, hidden.data<float>() + (end - 1) * n, width * sizeof(float));
        break;
      case ops::PoolingMode::kMean:
      case ops::PoolingMode::kMax:
        std::memcpy(out, first, width * sizeof(float));
        for (int64_t t = begin + 1; t < end; ++t) {
          const float* row = hidden.data<float>() + t * n;
          if (mode == ops::PoolingMode::kMax) {
            for (int64_t i = 0; i < width; ++i) out[i] = std::max(out[i], row[i]);
          } else {
            for (int64_t i = 0; i < width; ++i) out[i] += row[i];
          }
        }
        if (mode == ops::PoolingMode::kMean) {
          const float count = static_cast<float>(std::max<int64_t>(end - begin, 1));
          for (int64_t i = 0; i < width; ++i) out[i] /= count;
        }
        break;
    }
  }
  return Status();
}

Status L2Normalize(const Tensor& input, Tensor& output) {
  const int64_t n = input.dim(1);
  for (int64_t r = 0; r < input.dim(0); ++r) {
    const float* in = input.data<float>() + r * n;
    float* out = output.data<float>() + r * n;
    double sum_squares = 0.0;
    for (int64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(in[i]) * in[i];
    const float inverse = static_cast<float>(1.0 / std::max(std::sqrt(sum_squares), 1e-12));
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] * inverse;
  }
  return Status();
}

}  // namespace stamen::engine::cpu
