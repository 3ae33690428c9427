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

// The pair layouts of the AVX512-BF16 dot-product kernel (small_gemm.cc):
// vdpbf16ps multiplies each fp32 lane's two adjacent bf16 values, so both operands hold two
// adjacent steps of the sum ("a pair") side by side; an odd count's last pair is padded with zero.
constexpr int64_t BFloat16Pairs(int64_t steps) { return (steps + 1) / 2; }
// Rows [n, k] of a matrix (`stride` floats apart) as panels of 16 rows over `pairs` ≥ pairs(k)
// pairs of k, [panels][pairs][16][2], rounded to bf16; rows past n (up to panels · 16) and
// pairs past k are zero.
void PackBFloat16PairPanels(const float* rows, int64_t stride, int64_t n, int64_t k, int64_t pairs, int64_t panels,
                            uint16_t* packed);
// Rows [row_count ≤ 8, k] (`stride` floats apart) as one pair of every row side by side,
// [pairs(k)][row_count][2], rounded to bf16: a kernel's tile of rows broadcasts one 32-bit
// word per row and pair, at fixed offsets. Needs AVX512-BF16: it rounds with the instruction
// (vcvtne2ps2bf16), which rounds to nearest even as FloatsToBFloat16 does but reads subnormal
// inputs (below 1.2e-38) as zero.
void PackBFloat16RowPairs(const float* rows, int64_t stride, int64_t row_count, int64_t k, uint16_t* packed);

}  // namespace stamen::engine::cpu
