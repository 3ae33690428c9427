// The outer-product micro-kernel shared by the small-m GEMM (weights packed in panels) and the
// attention scores (keys packed in panels): kRows rows of a row-major matrix times one panel of
// 16 columns stored [depth][16], summed into two ymm registers per row (columns 0–7 and 8–15).
// Panels hold fp32, or bf16 (the bf16 small-m GEMM: half the bytes to stream, widened in
// registers; see BFloat16PanelSlot).
// Per step of depth, two panel loads and kRows broadcasts feed 2·kRows FMAs; with kRows = 6
// that is 12 accumulators + 2 loaded + 1 broadcast = 15 of the 16 ymm registers.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace stamen::engine::cpu {

inline constexpr int64_t kPanelColumns = 16;

// Where column c sits among a bf16 panel's 16 values of one depth step. Interleaving a ymm of
// 16 bf16 with zeros (unpacklo/unpackhi_epi16) widens them to fp32 in one instruction per
// half, but within 128-bit lanes: the low result takes values 0–3 and 8–11, the high one
// 4–7 and 12–15. Stored in this order, they come out as columns 0–7 and 8–15.
// The order is its own inverse: lane i of the widened values holds column kBFloat16PanelSlots[i].
inline constexpr int32_t kBFloat16PanelSlots[kPanelColumns] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};
constexpr int64_t BFloat16PanelSlot(int64_t column) { return kBFloat16PanelSlots[column]; }

// The fp32 columns 0–7 and 8–15 of one depth step of a panel.
[[gnu::always_inline]] inline void LoadPanelStep(const float* step, __m256& first, __m256& second) {
  first = _mm256_load_ps(step);
  second = _mm256_load_ps(step + 8);
}
[[gnu::always_inline]] inline void LoadPanelStep(const uint16_t* step, __m256& first, __m256& second) {
  const __m256i values = _mm256_load_si256(reinterpret_cast<const __m256i*>(step));
  first = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), values));
  second = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), values));
}

// The row loops must be unrolled for the sums to live in registers; GCC does not unroll them
// at -O2 without being told. The first `prefetch_lines` steps each also fetch one cache line
// from `prefetch` into L2 (the small-m GEMM's next panels, small_gemm.cc): one per step, so
// the fetches overlap the FMAs instead of queueing in front of them.
template <int kRows, typename PanelElement>
[[gnu::always_inline]] inline void MultiplyPanel(const float* rows, int64_t stride, const PanelElement* panel,
                                                 int64_t depth, __m256 (&low)[kRows], __m256 (&high)[kRows],
                                                 const char* prefetch = nullptr, int64_t prefetch_lines = 0) {
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) low[r] = high[r] = _mm256_setzero_ps();
  const auto step = [&](int64_t t) [[gnu::always_inline]] {
    __m256 first, second;
    LoadPanelStep(panel + t * kPanelColumns, first, second);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 value = _mm256_broadcast_ss(rows + r * stride + t);
      low[r] = _mm256_fmadd_ps(value, first, low[r]);
      high[r] = _mm256_fmadd_ps(value, second, high[r]);
    }
  };
  int64_t t = 0;
  for (const int64_t fetching = std::min(prefetch_lines, depth); t < fetching; ++t) {
    _mm_prefetch(prefetch + t * 64, _MM_HINT_T1);
    step(t);
  }
  for (; t < depth; ++t) step(t);
}

}  // namespace stamen::engine::cpu
