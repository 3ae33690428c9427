// The outer-product micro-kernel shared by the small-m GEMM (weights packed in panels) and the
// attention scores (keys packed in panels): kRows rows of a row-major matrix times one panel of
// 16 columns stored [depth][16], summed into two ymm registers per row (columns 0–7 and 8–15).
// Per step of depth, two panel loads and kRows broadcasts feed 2·kRows FMAs; with kRows = 6
// that is 12 accumulators + 2 loaded + 1 broadcast = 15 of the 16 ymm registers.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace stamen::engine::cpu {

inline constexpr int64_t kPanelColumns = 16;

// The row loops must be unrolled for the sums to live in registers; GCC does not unroll them
// at -O2 without being told.
template <int kRows>
[[gnu::always_inline]] inline void MultiplyPanel(const float* rows, int64_t stride, const float* panel, int64_t depth,
                                                 __m256 (&low)[kRows], __m256 (&high)[kRows]) {
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) low[r] = high[r] = _mm256_setzero_ps();
  for (int64_t t = 0; t < depth; ++t) {
    const __m256 first = _mm256_load_ps(panel + t * kPanelColumns);
    const __m256 second = _mm256_load_ps(panel + t * kPanelColumns + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 value = _mm256_broadcast_ss(rows + r * stride + t);
      low[r] = _mm256_fmadd_ps(value, first, low[r]);
      high[r] = _mm256_fmadd_ps(value, second, high[r]);
    }
  }
}

}  // namespace stamen::engine::cpu
