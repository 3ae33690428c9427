// Elementwise and gated activations on the CPU: eight lanes at a time (vector_activation.h),
// the scalar libm form for the tail of a row. Plain activations are usually fused into the
// gemm; the gated ones (GeGLU, SwiGLU) run here over the whole intermediate.
#include <algorithm>
#include <cmath>

#include "engine/cpu/kernels.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vector_activation.h"

namespace stamen::engine::cpu {
namespace {

float Apply(ops::Activation activation, float x) {
  switch (activation) {
    case ops::Activation::kIdentity: return x;
    case ops::Activation::kGeluErf: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case ops::Activation::kGeluTanh:
      return 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case ops::Activation::kRelu: return x > 0.0f ? x : 0.0f;
    case ops::Activation::kSilu: return x / (1.0f + std::exp(-x));
    case ops::Activation::kTanh: return std::tanh(x);
  }
  return x;
}

template <__m256 (*kFunction)(__m256)>
void ActivateEach(const float* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; i += 8) _mm256_storeu_ps(out + i, kFunction(_mm256_loadu_ps(in + i)));
}

}  // namespace

void ActivateVectors(ops::Activation activation, const float* in, float* out, int64_t count) {
  switch (activation) {
    case ops::Activation::kIdentity:
      if (in != out) std::copy(in, in + count, out);
      return;
    case ops::Activation::kGeluErf: return ActivateEach<GeluErfEight>(in, out, count);
    case ops::Activation::kGeluTanh: return ActivateEach<GeluTanhEight>(in, out, count);
    case ops::Activation::kRelu: return ActivateEach<ReluEight>(in, out, count);
    case ops::Activation::kSilu: return ActivateEach<SiluEight>(in, out, count);
    case ops::Activation::kTanh: return ActivateEach<TanhEight>(in, out, count);
  }
}

// Elements per task of the threaded loops below: enough to outweigh a task's claim (tens of
// nanoseconds), few enough that a 512-token step's intermediate splits over every core. Without
// threads, these passes are the serial part of a gated feed-forward that more cores never shorten.
constexpr int64_t kElementsPerTask = 16384;

Status Activate(ops::Activation activation, const Tensor& input, Tensor& output) {
  const float* in = input.data<float>();
  float* out = output.data<float>();
  const int64_t count = input.NumElements();
  const int64_t tasks = (count + kElementsPerTask - 1) / kElementsPerTask;
  ParallelFor(tasks, [&](int64_t task) {
    const int64_t begin = task * kElementsPerTask;
    const int64_t end = std::min(count, begin + kElementsPerTask);
    const int64_t vectors_end = begin + (end - begin) / 8 * 8;  // begin is a multiple of 8
    ActivateVectors(activation, in + begin, out + begin, vectors_end - begin);
    for (int64_t i = vectors_end; i < end; ++i) out[i] = Apply(activation, in[i]);
  });
  return Status();
}

Status GatedActivation(ops::Activation activation, const Tensor& gate_up, Tensor& output) {
  const int64_t rows = output.dim(0);
  const int64_t n = output.dim(1);
  const int64_t rows_per_task = std::max<int64_t>(1, kElementsPerTask / std::max<int64_t>(n, 1));
  ParallelFor((rows + rows_per_task - 1) / rows_per_task, [&](int64_t task) {
    const int64_t last = std::min(rows, (task + 1) * rows_per_task);
    for (int64_t r = task * rows_per_task; r < last; ++r) {
      const float* gate = gate_up.data<float>() + r * 2 * n;
      const float* up = gate + n;
      float* out = output.data<float>() + r * n;
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(out + i,
                         _mm256_mul_ps(ActivateEight(activation, _mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
      }
      for (; i < n; ++i) out[i] = Apply(activation, gate[i]) * up[i];
    }
  });
  return Status();
}

}  // namespace stamen::engine::cpu
