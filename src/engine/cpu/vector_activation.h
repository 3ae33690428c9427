// Activations eight lanes at a time (AVX2 + FMA, the x86-64-v3 baseline), for the kernels
// that apply them in bulk: the elementwise and gated activations, and the small-m GEMM's
// epilogue. Each is within ~2e-7 (relative for exp, absolute for tanh and erf) of the libm
// function; tests/engine/ops_test.cc checks them against double precision.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/ops/activation.h"

namespace stamen::engine::cpu {


// e^x: x = n·ln2 + r with |r| ≤ ln2/2, e^r by its degree-6 Taylor polynomial (relative
// error < 2e-7), 2^n put into the exponent bits. Clamped to the finite fp32 range.
[[gnu::always_inline]] inline __m256 ExpEight(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln2 in two parts: exact n·hi
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
}

// tanh(y) = 1 − 2 / (e^{2y} + 1): absolute error ~1e-7, which is all GELU and the pooler need.
[[gnu::always_inline]] inline __m256 TanhEight(__m256 y) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = ExpEight(_mm256_add_ps(y, y));
  return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
}

// erf by Abramowitz & Stegun 7.1.26 (absolute error ≤ 1.5e-7), odd in x.
[[gnu::always_inline]] inline __m256 ErfEight(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, one));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  p = _mm256_mul_ps(p, t);
  const __m256 e = ExpEight(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(a, a)));
  return _mm256_or_ps(_mm256_fnmadd_ps(p, e, one), sign);
}

// Each activation on eight lanes.
[[gnu::always_inline]] inline __m256 GeluErfEight(__m256 x) {
  const __m256 erf = ErfEight(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), erf));
}
[[gnu::always_inline]] inline __m256 GeluTanhEight(__m256 x) {
  const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 inner = _mm256_mul_ps(_mm256_set1_ps(0.79788456080286536f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), cube, x));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), TanhEight(inner)));
}
[[gnu::always_inline]] inline __m256 ReluEight(__m256 x) { return _mm256_max_ps(x, _mm256_setzero_ps()); }
[[gnu::always_inline]] inline __m256 SiluEight(__m256 x) {
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), ExpEight(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// The activation chosen at run time, on eight lanes. It takes the switch on every call; over
// many vectors of one activation, ActivateVectors takes it once.
inline __m256 ActivateEight(ops::Activation activation, __m256 x) {
  switch (activation) {
    case ops::Activation::kIdentity: return x;
    case ops::Activation::kGeluErf: return GeluErfEight(x);
    case ops::Activation::kGeluTanh: return GeluTanhEight(x);
    case ops::Activation::kRelu: return ReluEight(x);
    case ops::Activation::kSilu: return SiluEight(x);
    case ops::Activation::kTanh: return TanhEight(x);
  }
  return x;
}

// out[i] = activation(in[i]) for `count` floats, a multiple of 8 (in may be out): the switch
// taken once, so that the vectors' independent chains overlap. The small-m GEMM's tiles
// activate their block of sums through it; called per vector instead, GELU took 5% of MiniLM's
// 48-token step on AVX2 (activation.cc).
void ActivateVectors(ops::Activation activation, const float* in, float* out, int64_t count);

}  // namespace stamen::engine::cpu
