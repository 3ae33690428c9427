// What the CPU engine's matrix products compute in, chosen per engine (`--dtype`) and set on
// the thread that drives a step, as OpenMP's thread count is: the models call ops::Gemm the
// same way in both precisions, and only the CPU GEMM reads this.
//
// In bfloat16 the weights are converted once (on their first use, kept beside the fp32
// weight: prepared_weights.h) and each product's input is rounded to bf16 per call; products
// accumulate in fp32, and everything else (the residual stream, norms, softmax, attention,
// pooling) stays fp32, as torch's autocast does. On a CPU with AVX512-BF16 oneDNN computes the
// long products with its bf16 instructions; elsewhere the same rounded values are multiplied
// in fp32 (what the instruction computes, up to summation order), so results agree across
// machines and a machine without it can measure bf16's accuracy.
#pragma once

#include <cstdint>
#include <string_view>

namespace stamen::engine::cpu {

enum class MatrixPrecision : uint8_t { kFloat32, kBFloat16 };

// The calling thread's precision (kFloat32 unless a scope says otherwise).
MatrixPrecision CurrentMatrixPrecision();

// Sets the calling thread's precision until the scope ends.
class MatrixPrecisionScope {
 public:
  explicit MatrixPrecisionScope(MatrixPrecision precision);
  ~MatrixPrecisionScope();
  MatrixPrecisionScope(const MatrixPrecisionScope&) = delete;
  MatrixPrecisionScope& operator=(const MatrixPrecisionScope&) = delete;

 private:
  MatrixPrecision previous_;
};

// bf16 rounding (to nearest, ties to even; NaN stays NaN), eight lanes at a time.
// `count` floats → their bf16 bit patterns.
void FloatsToBFloat16(const float* values, int64_t count, uint16_t* target);
// `count` floats → the same values rounded to bf16, kept as fp32 (the emulated path's input).
void RoundFloatsToBFloat16(const float* values, int64_t count, float* target);
// One value, for tests and scalar tails.
float RoundToBFloat16(float value);

}  // namespace stamen::engine::cpu
