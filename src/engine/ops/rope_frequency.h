// RoPE's inverse frequencies, written once for both backends: the CPU and the CUDA table
// kernels call this same inline function (host and device), so a table is the same on either
// device. Float32 arithmetic in transformers' order (modeling_rope_utils: the default
// frequencies and _compute_llama3_parameters; for NTK, new-impl's NTKScalingRotaryEmbedding), so
// angles match its cos/sin to rounding.
#pragma once

#include <cmath>
#include <cstdint>

#include "model_folder/kinds.h"

#if defined(__CUDACC__)
#define STAMEN_ROPE_HOST_DEVICE __host__ __device__
#else
#define STAMEN_ROPE_HOST_DEVICE
#endif

namespace stamen::engine::ops {

// The inverse frequency of rotation pair i of the d rotated dimensions of a head: base^(−2i/d);
// with GTE's fixed NTK scaling (kNtk, factor f): (base·f)^(−2i/d) / f^(2/d); with dynamic NTK
// (kDynamicNtk, factor f, trained length n) in a sequence of `sequence_length` L > n:
// base'^(−2i/d), base' = base·(f·L/n − (f − 1))^(d/(d − 2)); with Llama 3's (kLlama3):
//   wavelength λ = 2π / f;  λ > original / low_freq_factor: f / factor;  λ < original / high_freq_factor: f;
//   between: (1 − s)·f / factor + s·f,  s = (original / λ − low_freq_factor) / (high_freq_factor − low_freq_factor).
STAMEN_ROPE_HOST_DEVICE inline float RopeInverseFrequency(int64_t i, int64_t d, float base, const RopeScaling& scaling,
                                                          int64_t sequence_length = 0) {
  const float exponent = static_cast<float>(2 * i) / static_cast<float>(d);
  const bool ntk = scaling.factor > 0.0f && scaling.type == RopeScalingType::kNtk;
  // new-impl computes 1 / (base·f)^(2i/d) in float32 (the scaled base a float32 scalar), then
  // divides by the Python double f^(2/d), which meets the float32 tensor as a float32 scalar.
  float scaled_base = ntk ? static_cast<float>(static_cast<double>(base) * scaling.factor) : base;
  const float trained = scaling.original_max_position_embeddings;
  if (scaling.factor > 0.0f && scaling.type == RopeScalingType::kDynamicNtk &&
      static_cast<float>(sequence_length) > trained) {
    // transformers' _compute_dynamic_ntk_parameters: the length a float32 tensor, so the stretch
    // is float32 arithmetic with the Python scalars (f − 1 and d / (d − 2), doubles) as float32.
    const float stretch = scaling.factor * static_cast<float>(sequence_length) / trained -
                          static_cast<float>(static_cast<double>(scaling.factor) - 1.0);
    const float power = static_cast<float>(static_cast<double>(d) / static_cast<double>(d - 2));
#if defined(__CUDA_ARCH__)
    scaled_base = base * powf(stretch, power);
#else
    scaled_base = base * std::pow(stretch, power);
#endif
  }
#if defined(__CUDA_ARCH__)
  const float frequency = 1.0f / powf(scaled_base, exponent);
  if (ntk) return frequency / static_cast<float>(pow(static_cast<double>(scaling.factor), 2.0 / static_cast<double>(d)));
#else
  const float frequency = 1.0f / std::pow(scaled_base, exponent);
  if (ntk) return frequency / static_cast<float>(std::pow(static_cast<double>(scaling.factor), 2.0 / static_cast<double>(d)));
#endif
  if (!(scaling.factor > 0.0f) || scaling.type == RopeScalingType::kDynamicNtk) return frequency;
  // torch evaluates `scalar / tensor` as tensor.reciprocal() * scalar, and scalars meet float32
  // tensors as float32; the wavelength bounds are Python doubles, compared as float32.
  const double original = scaling.original_max_position_embeddings;
  const float low_wavelength = static_cast<float>(original / scaling.low_freq_factor);
  const float high_wavelength = static_cast<float>(original / scaling.high_freq_factor);
  const float wavelength = (1.0f / frequency) * static_cast<float>(2.0 * 3.14159265358979323846);
  if (wavelength > low_wavelength) return frequency / scaling.factor;
  if (wavelength < high_wavelength) return frequency;
  const float smooth = ((1.0f / wavelength) * static_cast<float>(original) - scaling.low_freq_factor) /
                       static_cast<float>(static_cast<double>(scaling.high_freq_factor) - scaling.low_freq_factor);
  return (1.0f - smooth) * frequency / scaling.factor + smooth * frequency;
}

}  // namespace stamen::engine::ops
