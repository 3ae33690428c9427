// Float format conversions (and the zero fill) on the CPU: through an fp32 chunk, so every
// pair of F32, F16 and BF16 needs only a "to fp32" and a "from fp32" routine. Sources may be
// unaligned (mapped files).
#include <algorithm>
#include <cstring>

#include "engine/cpu/kernels.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace stamen::engine::cpu {
namespace {

constexpr int64_t kChunk = 256;

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  const uint32_t exponent = (half >> 10) & 0x1F;
  uint32_t mantissa = half & 0x3FF;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000 | (mantissa << 13);  // inf or nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: renormalise
    int shift = 0;
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((mantissa & 0x3FF) << 13);
  }
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return sign | 0x7E00;                       // nan
  if (magnitude >= 0x477FF000) return sign | 0x7C00;                      // rounds to inf
  if (magnitude < 0x33000001) return sign;                                // rounds to zero
  const int exponent = static_cast<int>(magnitude >> 23);
  uint32_t mantissa = (magnitude & 0x7FFFFF) | 0x800000;
  const int shift = exponent < 113 ? 126 - exponent : 13;                 // subnormal or normal
  uint32_t result = exponent < 113 ? 0 : static_cast<uint32_t>(exponent - 112) << 10;
  const uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  result += exponent < 113 ? kept : (kept & 0x3FF);
  if (rest > halfway || (rest == halfway && (kept & 1))) ++result;        // nearest, ties to even
  return sign | static_cast<uint16_t>(result);
}

void ToFloat(const std::byte* source, DataType type, int64_t count, float* out) {
  if (type == DataType::kF32) {
    std::memcpy(out, source, count * 4);
    return;
  }
  uint16_t halves[kChunk];
  std::memcpy(halves, source, count * 2);
  if (type == DataType::kBF16) {
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t bits = static_cast<uint32_t>(halves[i]) << 16;
      std::memcpy(&out[i], &bits, 4);
    }
    return;
  }
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(halves + i))));
  }
#endif
  for (; i < count; ++i) out[i] = HalfToFloat(halves[i]);
}

void FromFloat(const float* values, int64_t count, DataType type, std::byte* target) {
  if (type == DataType::kF32) {
    std::memcpy(target, values, count * 4);
    return;
  }
  uint16_t halves[kChunk];
  for (int64_t i = 0; i < count; ++i) {
    if (type == DataType::kF16) {
      halves[i] = FloatToHalf(values[i]);
      continue;
    }
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    const bool is_nan = (bits & 0x7FFFFFFF) > 0x7F800000;
    halves[i] = is_nan ? 0x7FC0 : static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
  }
  std::memcpy(target, halves, count * 2);
}

}  // namespace

Status Zero(Tensor& tensor) {
  std::memset(tensor.raw_data(), 0, tensor.NumBytes());
  return Status();
}

Status Convert(const Tensor& input, Tensor& output) {
  if (input.dtype() == output.dtype()) {
    std::memmove(output.raw_data(), input.raw_data(), input.NumBytes());
    return Status();
  }
  const auto* source = static_cast<const std::byte*>(input.raw_data());
  auto* target = static_cast<std::byte*>(output.raw_data());
  const size_t source_size = ElementSize(input.dtype());
  const size_t target_size = ElementSize(output.dtype());
  float chunk[kChunk];
  const int64_t total = input.NumElements();
  for (int64_t begin = 0; begin < total; begin += kChunk) {
    const int64_t count = std::min(kChunk, total - begin);
    ToFloat(source + begin * source_size, input.dtype(), count, chunk);
    FromFloat(chunk, count, output.dtype(), target + begin * target_size);
  }
  return Status();
}

}  // namespace stamen::engine::cpu
