// Embeddings in the lower precisions that sentence-transformers' `quantize_embeddings`
// (sentence_transformers/util/quantization.py) defines and Cohere's v2 `embedding_types`
// name: scalar int8 / uint8 over calibration ranges, and sign bits packed 8 per byte
// (binary / ubinary). Pure functions over rows of floats; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace stamen::gateway {

// What an embedding is answered as: Cohere's embedding_types, OpenAI's encoding_format and
// TEI's embedding_type ("float" and "base64" carry the floats themselves).
enum class EmbeddingType { kFloat, kBase64, kInt8, kUint8, kBinary, kUbinary };

// The type a name stands for ("float", "base64", "int8", "uint8", "binary", "ubinary"), or
// nullopt for any other name.
std::optional<EmbeddingType> ParseEmbeddingType(std::string_view name);
std::string_view EmbeddingTypeName(EmbeddingType type);
// int8, uint8, binary or ubinary: answered as integers, one per column or per 8 columns.
bool IsQuantized(EmbeddingType type);

// The value range each column is calibrated to for int8 / uint8: `minimums[c]` maps to
// bucket 0 and `maximums[c]` to bucket 255, as the `ranges` argument of quantize_embeddings.
struct QuantizationRanges {
  std::vector<float> minimums;
  std::vector<float> maximums;
  // [-1, 1] for every column: the range every component of a unit-length vector lies in, so
  // that a text's int8 vector never depends on the other texts of its request.
  static QuantizationRanges UnitVector(size_t columns);
};

// One row of `columns` floats quantized to `type` (int8, uint8, binary or ubinary), as the
// integers quantize_embeddings gives: int8 and uint8 one per column (bucket = floor((x -
// minimum) / ((maximum - minimum) / 255)) clipped to 0..255, minus 128 for int8); binary and
// ubinary one per 8 columns (bit 7 of byte 0 is column 0, set when the value is > 0; the
// last byte padded with zero bits), minus 128 for binary. `ranges` is used by int8 / uint8.
std::vector<int32_t> QuantizeRow(const float* row, size_t columns, EmbeddingType type,
                                 const QuantizationRanges& ranges);

}  // namespace stamen::gateway
