// The per-thread matrix precision and bf16 rounding (see matrix_precision.h).
#include "engine/cpu/matrix_precision.h"

#include "engine/cpu/cpu_path.h"

#include <immintrin.h>

// GCC 12's false alarms on its own AVX-512 intrinsics once inlined (see small_gemm.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

void PackBFloat16PairPanels(const float* rows, int64_t stride, int64_t n, int64_t k, int64_t pairs, int64_t panels,
                            uint16_t* packed) {
  constexpr int64_t kPanelRows = 16;
  std::fill(packed, packed + panels * pairs * kPanelRows * 2, uint16_t{0});
  thread_local std::vector<uint16_t> row;
  row.resize(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    FloatsToBFloat16(rows + r * stride, k, row.data());
    uint16_t* target = packed + r / kPanelRows * pairs * kPanelRows * 2 + r % kPanelRows * 2;
    for (int64_t i = 0; i < k; ++i) target[i / 2 * kPanelRows * 2 + i % 2] = row[i];
  }
}

// Up to eight rows' pairs, transposed in registers: per block of 16 pairs, each row's 32
// floats become 16 pair words in one vcvtne2ps2bf16, and an 8 × 16 transpose of those words
// (4 × 4 within 128-bit lanes, then two rounds of lane shuffles) leaves two pairs of all eight
// rows in each zmm. It replaced AVX2 rounding followed by one 4-byte copy per pair and row.
[[STAMEN_AVX512_BF16_TARGET]] void PackBFloat16RowPairs(const float* rows, int64_t stride, int64_t row_count, int64_t k,
                                                        uint16_t* packed) {
  constexpr int64_t kBlockPairs = 16;
  const int64_t pairs = BFloat16Pairs(k);
  const __mmask8 row_mask = static_cast<__mmask8>((1u << row_count) - 1);
  for (int64_t first_pair = 0; first_pair < pairs; first_pair += kBlockPairs) {
    // Each row's words of this block (rows past row_count zero): word j holds pair first_pair + j.
    __m512i words[8];
    const int64_t first = 2 * first_pair;
    const int64_t floats = std::min<int64_t>(2 * kBlockPairs, k - first);  // an odd k's last pair is padded
    const __mmask16 low_mask = static_cast<__mmask16>(floats >= 16 ? 0xFFFF : (1u << floats) - 1);
    const __mmask16 high_mask = static_cast<__mmask16>(floats <= 16 ? 0 : floats >= 32 ? 0xFFFF : (1u << (floats - 16)) - 1);
    for (int r = 0; r < 8; ++r) {
      if (r >= row_count) {
        words[r] = _mm512_setzero_si512();
        continue;
      }
      const float* row = rows + r * stride + first;
      const __m512 low = _mm512_maskz_loadu_ps(low_mask, row), high = _mm512_maskz_loadu_ps(high_mask, row + 16);
      words[r] = (__m512i)_mm512_cvtne2ps_pbh(high, low);
    }
    // Rows 4g … 4g + 3 (g = 0, 1): by_pair[g][j], lane L holds pair 4L + j of those four rows.
    __m512i by_pair[2][4];
    for (int g = 0; g < 2; ++g) {
      const __m512i* four = words + 4 * g;
      const __m512i low01 = _mm512_unpacklo_epi32(four[0], four[1]), high01 = _mm512_unpackhi_epi32(four[0], four[1]);
      const __m512i low23 = _mm512_unpacklo_epi32(four[2], four[3]), high23 = _mm512_unpackhi_epi32(four[2], four[3]);
      by_pair[g][0] = _mm512_unpacklo_epi64(low01, low23);
      by_pair[g][1] = _mm512_unpackhi_epi64(low01, low23);
      by_pair[g][2] = _mm512_unpacklo_epi64(high01, high23);
      by_pair[g][3] = _mm512_unpackhi_epi64(high01, high23);
    }
    // low_lanes[j]: lanes 0, 1 of rows 0–3, then of rows 4–7 (pairs j and 4 + j); high_lanes[j]
    // the same for lanes 2, 3 (pairs 8 + j and 12 + j).
    __m512i low_lanes[4], high_lanes[4];
    for (int j = 0; j < 4; ++j) {
      low_lanes[j] = _mm512_shuffle_i32x4(by_pair[0][j], by_pair[1][j], _MM_SHUFFLE(1, 0, 1, 0));
      high_lanes[j] = _mm512_shuffle_i32x4(by_pair[0][j], by_pair[1][j], _MM_SHUFFLE(3, 2, 3, 2));
    }
    // Pairs 4L + j and 4L + j + 1 (j even) with all eight rows, the first in the low 256 bits.
    for (int lane = 0; lane < 4; ++lane) {
      const __m512i* from = lane < 2 ? low_lanes : high_lanes;
      for (int j = 0; j < 4; j += 2) {
        const int64_t pair = first_pair + 4 * lane + j;
        if (pair >= pairs) continue;
        const __m512i both = lane % 2 == 0 ? _mm512_shuffle_i32x4(from[j], from[j + 1], _MM_SHUFFLE(2, 0, 2, 0))
                                           : _mm512_shuffle_i32x4(from[j], from[j + 1], _MM_SHUFFLE(3, 1, 3, 1));
        _mm256_mask_storeu_epi32(packed + pair * row_count * 2, row_mask, _mm512_castsi512_si256(both));
        if (pair + 1 < pairs) {
          _mm256_mask_storeu_epi32(packed + (pair + 1) * row_count * 2, row_mask, _mm512_extracti64x4_epi64(both, 1));
        }
      }
    }
  }
}

}  // namespace stamen::engine::cpu
