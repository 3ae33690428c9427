// The CPU kernels of the mixture-of-experts ops (ops/experts.h).
#include <string>

#include "engine/cpu/kernels.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/thread_pool.h"

namespace stamen::engine::cpu {

Status ExpertLogits(const Tensor& input, const Tensor& router, Tensor& logits) {
  // The router has only E columns: fp32 costs nothing next to the experts, whatever the
  // engine's matrix precision (--dtype bfloat16 multiplies the rest in bf16).
  const MatrixPrecisionScope precision(MatrixPrecision::kFloat32);
  return Gemm(input, router, Tensor(), logits, {});
}

Status CombineExperts(const Tensor& expert_rows, const Tensor& positions, const Tensor& weights, const Tensor& bias,
                      Tensor& output) {
  const int64_t tokens = output.dim(0);
  const int64_t width = output.dim(1);
  const int64_t chosen = positions.dim(1);
  const int64_t rows = expert_rows.dim(0);
  const int32_t* position = positions.data<int32_t>();
  for (int64_t i = 0; i < tokens * chosen; ++i) {
    if (position[i] < 0 || position[i] >= rows) {
      return Status::Error("combine_experts: position " + std::to_string(position[i]) + " at index " +
                           std::to_string(i) + " is outside the " + std::to_string(rows) + " expert rows");
    }
  }
  const float* values = expert_rows.data<float>();
  const float* weight = weights.data<float>();
  const float* shared_bias = bias.data<float>();
  float* out = output.data<float>();
  ParallelFor(tokens, [&](int64_t t) {
    float* target = out + t * width;
    for (int64_t j = 0; j < width; ++j) target[j] = shared_bias[j];
    for (int64_t k = 0; k < chosen; ++k) {
      const float w = weight[t * chosen + k];
      const float* source = values + int64_t{position[t * chosen + k]} * width;
      for (int64_t j = 0; j < width; ++j) target[j] += w * source[j];
    }
  });
  return Status();
}

}  // namespace stamen::engine::cpu
