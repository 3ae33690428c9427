// Sixteen-lane versions of vector_math.h's and vector_activation.h's functions, for the kernels
// that run only where the CPU has AVX-512 (the AMX GEMM's epilogue, the AMX attention's
// softmax). Each function carries the AVX-512 target itself, so this header may be included
// anywhere; callers check CpuPath::avx512 (or amx) first.
#pragma once

#include <immintrin.h>

#define STAMEN_AVX512_MATH gnu::target("avx512f,avx512bw,avx512dq,avx512vl"), gnu::always_inline

namespace stamen::engine::cpu {

// e^x for x ≤ 88 (clamped below at −87.3): x = n·ln 2 + r, e^r by the degree-7 polynomial of
// vector_math.h's Exp (within 2 ulp), 2^n applied by vscalefps.
[[STAMEN_AVX512_MATH]] inline __m512 ExpSixteen(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// 2^x for x ≤ 0, within 3e-6 relative: x = n + f with n the nearest integer and f in
// [−0.5, 0.5], 2^f by a degree-4 polynomial (a near-minimax fit of 2^f on that interval, its
// relative error checked in fp32 Horner form), 2^n applied by vscalefps (0 far below −126). Half
// the work of ExpSixteen, for the attention's softmax numerators, which are rounded to bf16
// (relative step 2^−8) right after: fp32's full precision would buy nothing there.
[[STAMEN_AVX512_MATH]] inline __m512 TwoToTheSixteen(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(9.570099413394928e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.591786280274391e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.40247443318367e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931217908859253e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.999992847442627e-1f));
  return _mm512_scalef_ps(p, n);
}

// GELU with erf: vector_activation.h's GeluErfEight (erf by Abramowitz & Stegun 7.1.26,
// absolute error ≤ 1.5e-7) on sixteen lanes.
[[STAMEN_AVX512_MATH]] inline __m512 GeluErfSixteen(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 scaled = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  const __m512 a = _mm512_abs_ps(scaled);
  const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), a, one));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  p = _mm512_mul_ps(p, t);
  const __m512 erf_of_a = _mm512_fnmadd_ps(p, ExpSixteen(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a))), one);
  // erf is odd: the sign of x on |erf|.
  const __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_castps_si512(erf_of_a), _mm512_and_si512(_mm512_castps_si512(scaled), _mm512_set1_epi32(INT32_MIN))));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(one, erf));
}

}  // namespace stamen::engine::cpu
