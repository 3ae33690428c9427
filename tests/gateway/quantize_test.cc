// Quantized embeddings against sentence-transformers' own quantize_embeddings: the expected
// integers below were computed by it (sentence-transformers 6.2, numpy) on these rows:
//
//   quantize_embeddings(rows, "int8" | "uint8", ranges=np.vstack([np.full(11, -1), np.full(11, 1)]))
//   quantize_embeddings(rows, "binary" | "ubinary")
//
// for three unit-length rows of 11 columns (not a multiple of 8: the packed last byte is
// padded) with a 0 (not > 0: bit clear) and both ends of the range (1.0 falls in bucket 254:
// float32 rounding, kept).
#include "gateway/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace stamen::gateway {
namespace {

constexpr size_t kColumns = 11;
const float kRows[3][kColumns] = {
    {0.000561f, 0.136151f, -0.124936f, 0.0f, -0.207212f, -0.451934f, 0.02741f, 0.610791f, -0.224319f, -0.282776f, 0.223241f},
    {0.102052f, 0.030143f, -0.266069f, -0.008365f, 0.198823f, 1.0f, -0.130856f, -0.543657f, -0.368745f, -0.526647f, -0.067225f},
    {-0.367321f, 0.078616f, 0.045428f, -0.054175f, -0.729387f, -1.0f, -0.014056f, 0.032838f, -0.443452f, -0.138459f, -0.283587f},
};

std::vector<std::vector<int32_t>> Quantize(EmbeddingType type, const QuantizationRanges& ranges) {
  std::vector<std::vector<int32_t>> rows;
  for (const auto& row : kRows) rows.push_back(QuantizeRow(row, kColumns, type, ranges));
  return rows;
}

TEST(QuantizeTest, Int8AndUint8OverUnitRangesMatchSentenceTransformers) {
  const auto ranges = QuantizationRanges::UnitVector(kColumns);
  EXPECT_EQ(Quantize(EmbeddingType::kInt8, ranges),
            (std::vector<std::vector<int32_t>>{{-1, 16, -17, -1, -27, -59, 2, 77, -30, -37, 27},
                                               {12, 3, -35, -2, 24, 126, -18, -70, -48, -68, -10},
                                               {-48, 9, 5, -8, -94, -128, -3, 3, -58, -19, -37}}));
  EXPECT_EQ(Quantize(EmbeddingType::kUint8, ranges),
            (std::vector<std::vector<int32_t>>{{127, 144, 111, 127, 101, 69, 130, 205, 98, 91, 155},
                                               {140, 131, 93, 126, 152, 254, 110, 58, 80, 60, 118},
                                               {80, 137, 133, 120, 34, 0, 125, 131, 70, 109, 91}}));
}

TEST(QuantizeTest, Int8OverBatchRangesMatchSentenceTransformersDefault) {
  // quantize_embeddings(rows, "int8") with no ranges calibrates on the rows' own minimum and
  // maximum per column; the same ranges given explicitly must give its answer.
  QuantizationRanges ranges{std::vector<float>(kColumns), std::vector<float>(kColumns)};
  for (size_t column = 0; column < kColumns; ++column) {
    ranges.minimums[column] = std::min({kRows[0][column], kRows[1][column], kRows[2][column]});
    ranges.maximums[column] = std::max({kRows[0][column], kRows[1][column], kRows[2][column]});
  }
  EXPECT_EQ(Quantize(EmbeddingType::kInt8, ranges),
            (std::vector<std::vector<int32_t>>{{71, 127, -13, 127, 15, -59, 127, 127, 127, 32, 126},
                                               {127, -128, -128, 87, 127, 126, -128, -128, -42, -128, -20},
                                               {-128, -12, 126, -128, -128, -128, 60, -1, -128, 127, -128}}));
}

TEST(QuantizeTest, BinaryPacksSignBitsAsNumpyPackbits) {
  const auto ranges = QuantizationRanges::UnitVector(kColumns);
  EXPECT_EQ(Quantize(EmbeddingType::kBinary, ranges),
            (std::vector<std::vector<int32_t>>{{67, -96}, {76, -128}, {-31, -128}}));
  EXPECT_EQ(Quantize(EmbeddingType::kUbinary, ranges),
            (std::vector<std::vector<int32_t>>{{195, 32}, {204, 0}, {97, 0}}));
}

TEST(QuantizeTest, NamesRoundTrip) {
  for (const char* name : {"float", "base64", "int8", "uint8", "binary", "ubinary"}) {
    auto type = ParseEmbeddingType(name);
    ASSERT_TRUE(type.has_value()) << name;
    EXPECT_EQ(EmbeddingTypeName(*type), name);
  }
  EXPECT_FALSE(ParseEmbeddingType("int4").has_value());
  EXPECT_FALSE(IsQuantized(EmbeddingType::kBase64));
  EXPECT_TRUE(IsQuantized(EmbeddingType::kUbinary));
}

}  // namespace
}  // namespace stamen::gateway
