// Small fp32 vector loops the CPU kernels share, written with AVX2/FMA (the x86-64-v3
// baseline we build for) and a scalar fallback. Sums keep 8 lanes, so results differ from a
// sequential sum by rounding only.
#pragma once

#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace stamen::engine::cpu {

// Σ a[i]·b[i].
inline float Dot(const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#if defined(__AVX2__) && defined(__FMA__)
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  const __m256 acc = _mm256_add_ps(acc0, acc1);
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  sum = _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
#endif
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y[i] += alpha · x[i].
inline void Axpy(float alpha, const float* x, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 scale = _mm256_set1_ps(alpha);
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(scale, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
#endif
  for (; i < n; ++i) y[i] += alpha * x[i];
}

// y[i] = alpha · x[i]. Written out: GCC's -O2 does not vectorise a loop whose pointers
// may alias, and attention's copy of its scaled queries ran one float at a time.
inline void ScaledCopy(float alpha, const float* x, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 scale = _mm256_set1_ps(alpha);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(scale, _mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) y[i] = alpha * x[i];
}

// x[i] *= alpha.
inline void Scale(float alpha, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

// Σ (x[i] − shift)^power for power 1 or 2, accumulated in double: norms over long rows stay
// accurate to fp32 rounding. Eight lanes widened to two 4-double halves, into four
// accumulators: with two, a 384-wide row waited on the adds' latency.
template <int kPower>
inline double SumOfPowers(const float* x, double shift, int64_t n) {
  static_assert(kPower == 1 || kPower == 2);
  int64_t i = 0;
  double sum = 0.0;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256d offset = _mm256_set1_pd(shift);
  __m256d sums[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  const auto add_eight = [&](const float* eight, __m256d& low, __m256d& high) [[gnu::always_inline]] {
    const __m256 values = _mm256_loadu_ps(eight);
    const __m256d first = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(values)), offset);
    const __m256d second = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(values, 1)), offset);
    if constexpr (kPower == 1) {
      low = _mm256_add_pd(low, first);
      high = _mm256_add_pd(high, second);
    } else {
      low = _mm256_fmadd_pd(first, first, low);
      high = _mm256_fmadd_pd(second, second, high);
    }
  };
  for (; i + 16 <= n; i += 16) {
    add_eight(x + i, sums[0], sums[1]);
    add_eight(x + i + 8, sums[2], sums[3]);
  }
  if (i + 8 <= n) {
    add_eight(x + i, sums[0], sums[1]);
    i += 8;
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(_mm256_add_pd(sums[0], sums[2]), _mm256_add_pd(sums[1], sums[3])));
  sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
  for (; i < n; ++i) {
    const double value = x[i] - shift;
    sum += kPower == 1 ? value : value * value;
  }
  return sum;
}

#if defined(__AVX2__) && defined(__FMA__)
// e^x per lane, within 2 ulp of std::exp over [-87, 88] (inputs are clamped to that range):
// x = n·ln 2 + r with |r| ≤ ln 2 / 2, e^r by a degree-7 polynomial (Cephes' expf
// coefficients), 2^n by building the exponent bits.
inline __m256 Exp(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
}
#endif

}  // namespace stamen::engine::cpu
