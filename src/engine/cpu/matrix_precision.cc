// The per-thread matrix precision and bf16 rounding (see matrix_precision.h).
#include "engine/cpu/matrix_precision.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace stamen::engine::cpu {
namespace {

thread_local MatrixPrecision current_precision = MatrixPrecision::kFloat32;

uint16_t RoundBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return 0x7FC0;  // a quiet NaN
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

// Eight floats rounded to bf16, left in the high half of each 32-bit lane (low half zero):
// the fp32 value of the rounded number.
__m256i RoundEight(__m256 values) {
  const __m256i bits = _mm256_castps_si256(values);
  const __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lowest_kept));
  const __m256i truncated = _mm256_and_si256(rounded, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)));
  // NaN inputs: rounding could carry them to infinity; keep a quiet NaN instead.
  const __m256 is_nan = _mm256_cmp_ps(values, values, _CMP_UNORD_Q);
  return _mm256_blendv_epi8(truncated, _mm256_set1_epi32(0x7FC00000), _mm256_castps_si256(is_nan));
}

}  // namespace

MatrixPrecision CurrentMatrixPrecision() { return current_precision; }

MatrixPrecisionScope::MatrixPrecisionScope(MatrixPrecision precision) : previous_(current_precision) {
  current_precision = precision;
}

MatrixPrecisionScope::~MatrixPrecisionScope() { current_precision = previous_; }

float RoundToBFloat16(float value) {
  const uint32_t bits = static_cast<uint32_t>(RoundBits(value)) << 16;
  float rounded;
  std::memcpy(&rounded, &bits, 4);
  return rounded;
}

void FloatsToBFloat16(const float* values, int64_t count, uint16_t* target) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i high = _mm256_srli_epi32(RoundEight(_mm256_loadu_ps(values + i)), 16);
    // Pack the eight 32-bit lanes' low halves: packus works within 128-bit lanes, so fix the
    // order with a permute.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(high, high), 0b1000);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(target + i), _mm256_castsi256_si128(packed));
  }
  for (; i < count; ++i) target[i] = RoundBits(values[i]);
}

void RoundFloatsToBFloat16(const float* values, int64_t count, float* target) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(target + i, _mm256_castsi256_ps(RoundEight(_mm256_loadu_ps(values + i))));
  }
  for (; i < count; ++i) target[i] = RoundToBFloat16(values[i]);
}

void PackBFloat16PairPanels(const float* rows, int64_t stride, int64_t n, int64_t k, int64_t panels, uint16_t* packed) {
  constexpr int64_t kPanelRows = 16;
  const int64_t pairs = BFloat16Pairs(k);
  std::fill(packed, packed + panels * pairs * kPanelRows * 2, uint16_t{0});
  thread_local std::vector<uint16_t> row;
  row.resize(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    FloatsToBFloat16(rows + r * stride, k, row.data());
    uint16_t* target = packed + r / kPanelRows * pairs * kPanelRows * 2 + r % kPanelRows * 2;
    for (int64_t i = 0; i < k; ++i) target[i / 2 * kPanelRows * 2 + i % 2] = row[i];
  }
}

void PackBFloat16RowPairs(const float* rows, int64_t stride, int64_t row_count, int64_t k, uint16_t* packed) {
  const int64_t pairs = BFloat16Pairs(k);
  thread_local std::vector<uint16_t> row;
  row.resize(static_cast<size_t>(pairs * 2));
  row.back() = 0;  // an odd k's padding
  for (int64_t r = 0; r < row_count; ++r) {
    FloatsToBFloat16(rows + r * stride, k, row.data());
    for (int64_t q = 0; q < pairs; ++q) std::memcpy(packed + (q * row_count + r) * 2, row.data() + q * 2, 2 * sizeof(uint16_t));
  }
}

}  // namespace stamen::engine::cpu
