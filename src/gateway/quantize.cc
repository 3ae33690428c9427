#include "gateway/quantize.h"

#include <algorithm>
#include <cmath>

namespace stamen::gateway {

namespace {

struct Named {
  std::string_view name;
  EmbeddingType type;
};
constexpr Named kNames[] = {
    {"float", EmbeddingType::kFloat}, {"base64", EmbeddingType::kBase64},   {"int8", EmbeddingType::kInt8},
    {"uint8", EmbeddingType::kUint8}, {"binary", EmbeddingType::kBinary}, {"ubinary", EmbeddingType::kUbinary},
};

}  // namespace

std::optional<EmbeddingType> ParseEmbeddingType(std::string_view name) {
  for (const Named& named : kNames) {
    if (named.name == name) return named.type;
  }
  return std::nullopt;
}

std::string_view EmbeddingTypeName(EmbeddingType type) {
  for (const Named& named : kNames) {
    if (named.type == type) return named.name;
  }
  return "float";
}

bool IsQuantized(EmbeddingType type) { return type != EmbeddingType::kFloat && type != EmbeddingType::kBase64; }

QuantizationRanges QuantizationRanges::UnitVector(size_t columns) {
  return {std::vector<float>(columns, -1.0f), std::vector<float>(columns, 1.0f)};
}

std::vector<int32_t> QuantizeRow(const float* row, size_t columns, EmbeddingType type,
                                 const QuantizationRanges& ranges) {
  std::vector<int32_t> out;
  if (type == EmbeddingType::kBinary || type == EmbeddingType::kUbinary) {
    // numpy.packbits(embeddings > 0): big-endian bit order within each byte.
    const int32_t offset = type == EmbeddingType::kBinary ? 128 : 0;
    out.assign((columns + 7) / 8, 0);
    for (size_t column = 0; column < columns; ++column) {
      if (row[column] > 0) out[column / 8] |= 0x80 >> (column % 8);
    }
    for (int32_t& byte : out) byte -= offset;
    return out;
  }
  // int8 / uint8. In float32 throughout, as quantize_embeddings computes it, so that the
  // floor lands on the same bucket.
  const int32_t offset = type == EmbeddingType::kInt8 ? 128 : 0;
  out.resize(columns);
  for (size_t column = 0; column < columns; ++column) {
    const float start = ranges.minimums[column];
    float step = (ranges.maximums[column] - start) / 255.0f;
    if (step == 0) step = 1;  // a constant column: every value in bucket 0 (or above)
    float bucket = std::floor((row[column] - start) / step);
    if (std::isnan(bucket)) bucket = 0;  // numpy casts a NaN bucket to 0
    out[column] = static_cast<int32_t>(std::clamp(bucket, 0.0f, 255.0f)) - offset;
  }
  return out;
}

}  // namespace stamen::gateway
