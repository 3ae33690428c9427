// Elementwise activations on the CPU (the scalar reference; models fuse them into the gemm).
#include <cmath>

#include "engine/cpu/kernels.h"

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

}  // namespace

Status Activate(ops::Activation activation, const Tensor& input, Tensor& output) {
  const float* in = input.data<float>();
  float* out = output.data<float>();
  const int64_t count = input.NumElements();
  for (int64_t i = 0; i < count; ++i) out[i] = Apply(activation, in[i]);
  return Status();
}

Status GatedActivation(ops::Activation activation, const Tensor& gate_up, Tensor& output) {
  const int64_t rows = output.dim(0);
  const int64_t n = output.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    const float* gate = gate_up.data<float>() + r * 2 * n;
    const float* up = gate + n;
    float* out = output.data<float>() + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = Apply(activation, gate[i]) * up[i];
  }
  return Status();
}

}  // namespace stamen::engine::cpu
