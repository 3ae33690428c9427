// Pooling and L2 normalisation on the CPU.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/kernels.h"
#include "engine/cpu/thread_pool.h"

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
      case ops::PoolingMode::kMeanSqrtLen:
        std::memcpy(out, first, width * sizeof(float));
        for (int64_t t = begin + 1; t < end; ++t) {
          const float* row = hidden.data<float>() + t * n;
          if (mode == ops::PoolingMode::kMax) {
            for (int64_t i = 0; i < width; ++i) out[i] = std::max(out[i], row[i]);
          } else {
            for (int64_t i = 0; i < width; ++i) out[i] += row[i];
          }
        }
        if (mode != ops::PoolingMode::kMax) {
          const float count = static_cast<float>(std::max<int64_t>(end - begin, 1));
          const float divisor = mode == ops::PoolingMode::kMean ? count : std::sqrt(count);
          for (int64_t i = 0; i < width; ++i) out[i] /= divisor;
        }
        break;
      case ops::PoolingMode::kWeightedMean: {
        // Token t - begin + 1 of the sequence weighs that much; the weights sum to n(n + 1)/2.
        std::memset(out, 0, width * sizeof(float));
        for (int64_t t = begin; t < end; ++t) {
          const float* row = hidden.data<float>() + t * n;
          const float weight = static_cast<float>(t - begin + 1);
          for (int64_t i = 0; i < width; ++i) out[i] += weight * row[i];
        }
        const int64_t count = end - begin;
        const float total = static_cast<float>(count * (count + 1) / 2);
        for (int64_t i = 0; i < width; ++i) out[i] /= std::max(total, 1.0f);
        break;
      }
      case ops::PoolingMode::kSplade:
        return Status::Error("pool: splade pooling runs through SpladePool");  // refused by ops::Pool already
    }
  }
  return Status();
}

Status SpladePool(const Tensor& logits, const Tensor& cu_seqlens, int64_t first_token, Tensor& output) {
  const int64_t vocabulary = logits.dim(1);
  const int64_t last_token = first_token + logits.dim(0);  // one past the slice
  const int32_t* bounds = cu_seqlens.data<int32_t>();
  const int64_t sequences = output.dim(0);
  // Sequences are independent rows of the output, so they run in parallel.
  ParallelFor(sequences, [&](int64_t s) {
    const int64_t begin = std::max<int64_t>(bounds[s], first_token);
    const int64_t end = std::min<int64_t>(bounds[s + 1], last_token);
    float* out = output.data<float>() + s * vocabulary;
    for (int64_t t = begin; t < end; ++t) {
      const float* row = logits.data<float>() + (t - first_token) * vocabulary;
      // Most masked-LM logits are negative: relu makes them 0, which never raises the max.
      for (int64_t i = 0; i < vocabulary; ++i) {
        if (row[i] > 0.0f) out[i] = std::max(out[i], std::log1p(row[i]));
      }
    }
  });
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

Status ScaledTanhRound(Tensor& values, float scale) {
  float* value = values.data<float>();
  // nearbyint rounds half to even in the default rounding mode, as torch.round.
  for (int64_t i = 0; i < values.NumElements(); ++i) value[i] = std::nearbyint(scale * std::tanh(value[i]));
  return Status();
}

}  // namespace stamen::engine::cpu
