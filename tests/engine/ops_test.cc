// Each CPU op against a straightforward double-precision reference on random inputs, plus
// the argument checks every op makes before computing.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "engine/cpu/amx_gemm.h"
#include "engine/cpu/cpu_path.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/blocked_weights.h"
#include "engine/cpu/prepared_weights.h"
#include "engine/cpu/small_gemm.h"
#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/convert.h"
#include "engine/ops/embedding.h"
#include "engine/ops/experts.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/pooling.h"
#include "engine/ops/rope.h"

namespace stamen::engine {
namespace {

Tensor Random(const Shape& shape, uint32_t seed, float scale = 1.0f) {
  Tensor tensor = std::move(Tensor::Allocate(DataType::kF32, shape).value());
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  for (int64_t i = 0; i < tensor.NumElements(); ++i) tensor.data<float>()[i] = normal(generator);
  return tensor;
}

Tensor Zeros(const Shape& shape, DataType type = DataType::kF32) {
  return std::move(Tensor::Allocate(type, shape).value());
}

Tensor Ints(const std::vector<int32_t>& values) {
  Tensor tensor = Zeros({static_cast<int64_t>(values.size())}, DataType::kI32);
  std::copy(values.begin(), values.end(), tensor.data<int32_t>());
  return tensor;
}

double GeluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(GemmTest, MatchesReferenceWithBiasAccumulateAndActivation) {
  const int64_t m = 37, k = 50, n = 29;
  Tensor x = Random({m, k}, 1), w = Random({n, k}, 2), b = Random({n}, 3);
  Tensor plain = Zeros({m, n}), gelu = Zeros({m, n}), accumulated = Random({m, n}, 4);
  Tensor before = Zeros({m, n});
  std::copy_n(accumulated.data<float>(), m * n, before.data<float>());
  ASSERT_TRUE(ops::Gemm(x, w, b, plain).ok());
  ASSERT_TRUE(ops::Gemm(x, w, b, gelu, {.activation = ops::Activation::kGeluErf}).ok());
  ASSERT_TRUE(ops::Gemm(x, w, Tensor(), accumulated, {.accumulate = true}).ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (int64_t p = 0; p < k; ++p) dot += double{x.data<float>()[i * k + p]} * w.data<float>()[j * k + p];
      const double biased = dot + b.data<float>()[j];
      EXPECT_NEAR(plain.data<float>()[i * n + j], biased, 1e-4);
      EXPECT_NEAR(gelu.data<float>()[i * n + j], GeluErf(biased), 1e-4);
      EXPECT_NEAR(accumulated.data<float>()[i * n + j], before.data<float>()[i * n + j] + dot, 1e-4);
    }
  }
}

double Activated(ops::Activation activation, double x) {
  switch (activation) {
    case ops::Activation::kIdentity: return x;
    case ops::Activation::kGeluErf: return GeluErf(x);
    case ops::Activation::kGeluTanh: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case ops::Activation::kRelu: return x > 0.0 ? x : 0.0;
    case ops::Activation::kSilu: return x / (1.0 + std::exp(-x));
    case ops::Activation::kTanh: return std::tanh(x);
  }
  return x;
}

// Short inputs (m ≤ SmallGemmMaxRows()) take the packed kernel: every row count of a partial
// tile, a width that ends in a partial panel (a pair of panels and a single one for the
// AVX-512 tiles), every activation, accumulation, and no bias.
// Widths of one task (45: three panels, the last partial), of whole tasks and a tail of two
// panels (69) or one (112), the last two deep enough for the kernel's loop to use threads.
class ShortGemmTest : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(ShortGemmTest, ShortInputsMatchReferenceThroughPackedWeights) {
  const auto [k, n] = GetParam();
  Tensor w = Random({n, k}, 12), b = Random({n}, 13, 0.5f);
  const size_t packed_before = cpu::PreparedWeightBytes();
  for (const int64_t m : {int64_t{1}, int64_t{5}, int64_t{6}, int64_t{7}, int64_t{13}, cpu::SmallGemmMaxRows()}) {
    Tensor x = Random({m, k}, static_cast<uint32_t>(m), 0.3f);
    for (const ops::Activation activation :
         {ops::Activation::kIdentity, ops::Activation::kGeluErf, ops::Activation::kGeluTanh, ops::Activation::kRelu,
          ops::Activation::kSilu, ops::Activation::kTanh}) {
      Tensor y = Zeros({m, n});
      ASSERT_TRUE(ops::Gemm(x, w, b, y, {.activation = activation}).ok());
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double dot = b.data<float>()[j];
          for (int64_t p = 0; p < k; ++p) dot += double{x.data<float>()[i * k + p]} * w.data<float>()[j * k + p];
          ASSERT_NEAR(y.data<float>()[i * n + j], Activated(activation, dot), 2e-5 * (1.0 + std::abs(dot)))
              << "m " << m << " row " << i << " column " << j << " activation " << static_cast<int>(activation);
        }
      }
    }
    Tensor accumulated = Random({m, n}, 99), before = Zeros({m, n});
    std::copy_n(accumulated.data<float>(), m * n, before.data<float>());
    ASSERT_TRUE(ops::Gemm(x, w, Tensor(), accumulated, {.accumulate = true}).ok());
    for (int64_t i = 0; i < m * n; ++i) {
      double dot = 0.0;
      for (int64_t p = 0; p < k; ++p) dot += double{x.data<float>()[i / n * k + p]} * w.data<float>()[i % n * k + p];
      ASSERT_NEAR(accumulated.data<float>()[i], before.data<float>()[i] + dot, 2e-5);
    }
  }
  // One packed copy of w for all of those calls: its panels of 16 columns × k.
  EXPECT_EQ(cpu::PreparedWeightBytes() - packed_before, static_cast<size_t>((n + 15) / 16 * 16 * k) * sizeof(float));
}

INSTANTIATE_TEST_SUITE_P(Widths, ShortGemmTest,
                         ::testing::Values(std::pair<int64_t, int64_t>{50, 45}, std::pair<int64_t, int64_t>{300, 69},
                                           std::pair<int64_t, int64_t>{300, 112}));

// Past the small-m cut and up to 512 rows, on AVX-512, whole 64-row blocks go to a fixed-row
// oneDNN primitive over the weight's blocked copy and the rest to the packed kernel: row counts
// on both sides of a block, a width that is not a multiple of oneDNN's 64-column blocks, bias,
// an activation, accumulation. Elsewhere the same calls take the runtime-row primitive.
TEST(GemmTest, MediumInputsMatchReferenceThroughBlockedWeights) {
  const int64_t k = 80, n = 70;
  Tensor w = Random({n, k}, 21), b = Random({n}, 22, 0.5f);
  const size_t prepared_before = cpu::PreparedWeightBytes();
  for (const int64_t m : {cpu::SmallGemmMaxRows() + 1, int64_t{100}, int64_t{128}, int64_t{203}, int64_t{512},
                          int64_t{513}}) {
    Tensor x = Random({m, k}, static_cast<uint32_t>(m), 0.3f);
    Tensor y = Zeros({m, n}), accumulated = Random({m, n}, 98), before = Zeros({m, n});
    std::copy_n(accumulated.data<float>(), m * n, before.data<float>());
    ASSERT_TRUE(ops::Gemm(x, w, b, y, {.activation = ops::Activation::kGeluTanh}).ok());
    ASSERT_TRUE(ops::Gemm(x, w, b, accumulated, {.accumulate = true}).ok());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double dot = b.data<float>()[j];
        for (int64_t p = 0; p < k; ++p) dot += double{x.data<float>()[i * k + p]} * w.data<float>()[j * k + p];
        ASSERT_NEAR(y.data<float>()[i * n + j], Activated(ops::Activation::kGeluTanh, dot), 2e-5 * (1.0 + std::abs(dot)))
            << "m " << m << " row " << i << " column " << j;
        ASSERT_NEAR(accumulated.data<float>()[i * n + j], before.data<float>()[i * n + j] + dot, 2e-5 * (1.0 + std::abs(dot)))
            << "m " << m << " row " << i << " column " << j;
      }
    }
  }
  // Where the AVX-512 kernels run and oneDNN has the blocked layout, the copy was made and used.
  const size_t blocked = cpu::BlockedWeightBytes(n, k);
  if (cpu::DetectCpuPath().avx512 && blocked > 0) {
    EXPECT_GE(cpu::PreparedWeightBytes() - prepared_before, blocked);
  }
}

// bf16 rounds to nearest, ties to even, and keeps NaN and infinities.
TEST(GemmTest, BFloat16RoundingIsNearestEven) {
  const auto bits = [](float value) {
    uint32_t b;
    std::memcpy(&b, &value, 4);
    return b;
  };
  const auto from_bits = [](uint32_t b) {
    float value;
    std::memcpy(&value, &b, 4);
    return value;
  };
  EXPECT_EQ(bits(cpu::RoundToBFloat16(from_bits(0x3F808000))), 0x3F800000u);  // tie, even below
  EXPECT_EQ(bits(cpu::RoundToBFloat16(from_bits(0x3F818000))), 0x3F820000u);  // tie, even above
  EXPECT_EQ(bits(cpu::RoundToBFloat16(from_bits(0x3F808001))), 0x3F810000u);  // above the tie
  EXPECT_EQ(bits(cpu::RoundToBFloat16(std::numeric_limits<float>::infinity())), 0x7F800000u);
  EXPECT_TRUE(std::isnan(cpu::RoundToBFloat16(std::numeric_limits<float>::quiet_NaN())));
  // The vector loops agree with the scalar rounding, tails included.
  Tensor values = Random({1, 37}, 5, 3.0f);
  values.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  values.data<float>()[9] = from_bits(0x3F818000);
  std::vector<float> rounded(37);
  std::vector<uint16_t> halves(37);
  cpu::RoundFloatsToBFloat16(values.data<float>(), 37, rounded.data());
  cpu::FloatsToBFloat16(values.data<float>(), 37, halves.data());
  for (int i = 0; i < 37; ++i) {
    const float expected = cpu::RoundToBFloat16(values.data<float>()[i]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(rounded[i]) && (halves[i] & 0x7FFF) > 0x7F80) << i;
      continue;
    }
    EXPECT_EQ(bits(rounded[i]), bits(expected)) << i;
    EXPECT_EQ(uint32_t{halves[i]} << 16, bits(expected)) << i;
  }
}

// In bf16 a product multiplies the bf16-rounded input by the bf16-rounded weight and sums in
// fp32, on both paths (the packed kernel for short inputs, oneDNN for long ones) and whether
// or not the CPU has bf16 instructions: each product of two bf16 values is exact in fp32, so
// the result matches a double-precision reference over the rounded values to fp32 summation
// error, and differs from the unrounded product by bf16's rounding.
// An odd depth checks the padding of the last depth pair in the AVX512-BF16 kernel's panels;
// depths that are no multiple of 32 the padding of the AMX tiles (amx_gemm.h), 2048 their input
// rows padded off a 4 KiB stride, and 300 rows two of their 256-row blocks.
class BFloat16GemmTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(BFloat16GemmTest, ProductsMultiplyRoundedValues) {
  const int64_t k = GetParam(), n = 40;
  Tensor w = Random({n, k}, 41), b = Random({n}, 42, 0.5f);
  std::cout << "[ cpu      ] " << cpu::DescribeCpuPath() << "\n";
  const cpu::MatrixPrecisionScope bfloat16(cpu::MatrixPrecision::kBFloat16);
  for (const int64_t m : {int64_t{1}, int64_t{7}, int64_t{17}, int64_t{33}, cpu::SmallGemmMaxRows(),
                          cpu::SmallGemmMaxRows() + 1, int64_t{90}, int64_t{300}}) {
    Tensor x = Random({m, k}, static_cast<uint32_t>(100 + m), 0.7f);
    for (const bool accumulate : {false, true}) {
      Tensor y = Random({m, n}, 7), before = Zeros({m, n});
      std::copy_n(y.data<float>(), m * n, before.data<float>());
      const ops::Activation activation = accumulate ? ops::Activation::kIdentity : ops::Activation::kGeluErf;
      ASSERT_TRUE(ops::Gemm(x, w, b, y, {.accumulate = accumulate, .activation = activation}).ok());
      double largest_rounding_effect = 0.0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double rounded = b.data<float>()[j], exact = rounded, magnitude = std::abs(rounded);
          for (int64_t p = 0; p < k; ++p) {
            const float xv = x.data<float>()[i * k + p], wv = w.data<float>()[j * k + p];
            const double term = double{cpu::RoundToBFloat16(xv)} * cpu::RoundToBFloat16(wv);
            rounded += term;
            exact += double{xv} * wv;
            magnitude += std::abs(term);
          }
          const double base = accumulate ? before.data<float>()[i * n + j] : 0.0;
          const double expected = base + Activated(activation, rounded);
          ASSERT_NEAR(y.data<float>()[i * n + j], expected, 1e-6 * (1.0 + magnitude + std::abs(base)))
              << "m " << m << " row " << i << " column " << j << " accumulate " << accumulate;
          largest_rounding_effect = std::max(largest_rounding_effect, std::abs(rounded - exact));
        }
      }
      EXPECT_GT(largest_rounding_effect, 1e-4) << "m " << m << ": the inputs were not rounded to bf16";
    }
  }
  // Every row count took the AMX tiles where the CPU has them, and short inputs the bf16
  // dot-product kernel's pair panels where it has only AVX512-BF16: asking for that copy again
  // finds it instead of making one.
  const cpu::CpuPath& path = cpu::DetectCpuPath();
  if (path.amx) {
    const size_t prepared = cpu::PreparedWeightBytes();
    EXPECT_NE(cpu::FindPreparedWeight(w, cpu::WeightForm::kTilesBFloat16), nullptr);
    EXPECT_EQ(cpu::PreparedWeightBytes(), prepared);
  } else if (path.avx512 && path.bfloat16_instructions) {
    const size_t prepared = cpu::PreparedWeightBytes();
    EXPECT_NE(cpu::FindPreparedWeight(w, cpu::WeightForm::kPanelsBFloat16Pairs), nullptr);
    EXPECT_EQ(cpu::PreparedWeightBytes(), prepared);
  }
}

INSTANTIATE_TEST_SUITE_P(Depths, BFloat16GemmTest, ::testing::Values(int64_t{72}, int64_t{71}, int64_t{2048}));

// Every activation through the AMX GEMM's epilogue (GELU on sixteen lanes, the others on two
// halves of eight), with a bias and a partial last panel.
TEST(GemmTest, EveryActivationOnAmxTiles) {
  if (!cpu::DetectCpuPath().amx) GTEST_SKIP() << "no AMX on this CPU: " << cpu::DescribeCpuPath();
  const int64_t m = 20, k = 40, n = 45;
  Tensor x = Random({m, k}, 61, 0.7f), w = Random({n, k}, 62), b = Random({n}, 63, 0.5f);
  const cpu::MatrixPrecisionScope bfloat16(cpu::MatrixPrecision::kBFloat16);
  for (const ops::Activation activation : {ops::Activation::kGeluErf, ops::Activation::kGeluTanh, ops::Activation::kRelu,
                                           ops::Activation::kSilu, ops::Activation::kTanh}) {
    Tensor y = Zeros({m, n});
    ASSERT_TRUE(ops::Gemm(x, w, b, y, {.activation = activation}).ok());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = b.data<float>()[j], magnitude = std::abs(sum);
        for (int64_t p = 0; p < k; ++p) {
          const double term = double{cpu::RoundToBFloat16(x.data<float>()[i * k + p])} *
                              cpu::RoundToBFloat16(w.data<float>()[j * k + p]);
          sum += term;
          magnitude += std::abs(term);
        }
        ASSERT_NEAR(y.data<float>()[i * n + j], Activated(activation, sum), 1e-6 * (1.0 + magnitude))
            << "activation " << static_cast<int>(activation) << " row " << i << " column " << j;
      }
    }
  }
}

// The fused feed-forward on AMX tiles (the intermediate rounded to bf16 in each thread's cache)
// gives the two AMX products' result bit for bit: a partial last row block and tile, a width that
// ends in a single partial panel, a depth that is not a whole tile, written and accumulated.
TEST(GemmTest, FusedFeedForwardOnAmxTilesEqualsTwoProducts) {
  if (!cpu::DetectCpuPath().amx) GTEST_SKIP() << "no AMX on this CPU: " << cpu::DescribeCpuPath();
  const int64_t m = 1000, k = 40, width = 1000, n = 45;
  Tensor x = Random({m, k}, 71, 0.7f), up = Random({width, k}, 72), up_bias = Random({width}, 73, 0.5f);
  Tensor down = Random({n, width}, 74, 0.1f), down_bias = Random({n}, 75, 0.5f);
  const cpu::MatrixPrecisionScope bfloat16(cpu::MatrixPrecision::kBFloat16);
  for (const ops::Activation activation : {ops::Activation::kGeluErf, ops::Activation::kSilu}) {
    for (const bool accumulate : {false, true}) {
      Tensor intermediate = Zeros({m, width}), expected = Random({m, n}, 76), fused = Zeros({m, n});
      std::copy_n(expected.data<float>(), m * n, fused.data<float>());
      ASSERT_TRUE(ops::Gemm(x, up, up_bias, intermediate, {.activation = activation}).ok());
      ASSERT_TRUE(ops::Gemm(intermediate, down, down_bias, expected, {.accumulate = accumulate}).ok());
      ASSERT_TRUE(cpu::AmxFeedForward(x, up, up_bias, activation, down, down_bias, fused, accumulate))
          << "the fused path was not taken";
      for (int64_t i = 0; i < m * n; ++i) {
        ASSERT_EQ(fused.data<float>()[i], expected.data<float>()[i])
            << "activation " << static_cast<int>(activation) << " accumulate " << accumulate << " row " << i / n
            << " column " << i % n;
      }
    }
  }
}

// An output of 32 MiB or more leaves the AMX GEMM through non-temporal stores (whole aligned
// vectors; a partial last panel through masked ones): the same sums, checked on every 37th row.
TEST(GemmTest, LargeBFloat16OutputsMatchReference) {
  if (!cpu::DetectCpuPath().amx) GTEST_SKIP() << "no AMX on this CPU: " << cpu::DescribeCpuPath();
  const int64_t m = 8200, k = 40, n = 1030;
  Tensor x = Random({m, k}, 51, 0.7f), w = Random({n, k}, 52), b = Random({n}, 53, 0.5f), y = Zeros({m, n});
  const cpu::MatrixPrecisionScope bfloat16(cpu::MatrixPrecision::kBFloat16);
  ASSERT_TRUE(ops::Gemm(x, w, b, y, {.activation = ops::Activation::kGeluErf}).ok());
  for (int64_t i = 0; i < m; i += 37) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = b.data<float>()[j], magnitude = std::abs(sum);
      for (int64_t p = 0; p < k; ++p) {
        const double term = double{cpu::RoundToBFloat16(x.data<float>()[i * k + p])} *
                            cpu::RoundToBFloat16(w.data<float>()[j * k + p]);
        sum += term;
        magnitude += std::abs(term);
      }
      ASSERT_NEAR(y.data<float>()[i * n + j], Activated(ops::Activation::kGeluErf, sum), 1e-6 * (1.0 + magnitude))
          << "row " << i << " column " << j;
    }
  }
}

// A packed copy belongs to its weight's memory: a new weight (even at the same address, as
// the allocator may hand back) is packed afresh, and a view without an owner stays with oneDNN.
TEST(GemmTest, PackedWeightsFollowTheirWeightsMemory) {
  const int64_t m = 3, k = 20, n = 16;
  Tensor x = Random({m, k}, 21);
  for (uint32_t seed = 30; seed < 34; ++seed) {
    Tensor w = Random({n, k}, seed);
    Tensor y = Zeros({m, n});
    ASSERT_TRUE(ops::Gemm(x, w, Tensor(), y).ok());
    Tensor unowned = Tensor::Wrap(w.raw_data(), DataType::kF32, w.shape());
    Tensor y_unowned = Zeros({m, n});
    ASSERT_TRUE(ops::Gemm(x, unowned, Tensor(), y_unowned).ok());
    for (int64_t i = 0; i < m * n; ++i) {
      double dot = 0.0;
      for (int64_t p = 0; p < k; ++p) dot += double{x.data<float>()[i / n * k + p]} * w.data<float>()[i % n * k + p];
      ASSERT_NEAR(y.data<float>()[i], dot, 1e-4) << "weight " << seed;
      ASSERT_NEAR(y_unowned.data<float>()[i], dot, 1e-4) << "weight " << seed;
    }
  }
}

TEST(GemmTest, RejectsMismatchedShapes) {
  Tensor x = Zeros({4, 8}), w = Zeros({3, 7}), y = Zeros({4, 3});
  Status status = ops::Gemm(x, w, Tensor(), y);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("gemm: weight"), std::string::npos) << status.message();
  Tensor ids = Zeros({4, 8}, DataType::kI32);
  EXPECT_FALSE(ops::Gemm(ids, Zeros({3, 8}), Tensor(), y).ok());
  EXPECT_FALSE(ops::Gemm(Tensor(), Zeros({3, 8}), Tensor(), y).ok());
}

TEST(ActivationTest, MatchesFormulas) {
  Tensor x = Random({5, 40}, 5, 3.0f);
  Tensor y = Zeros({5, 40});
  ASSERT_TRUE(ops::Activate(ops::Activation::kGeluErf, x, y).ok());
  for (int64_t i = 0; i < 200; ++i) EXPECT_NEAR(y.data<float>()[i], GeluErf(x.data<float>()[i]), 1e-6);
  ASSERT_TRUE(ops::Activate(ops::Activation::kTanh, x, y).ok());
  for (int64_t i = 0; i < 200; ++i) EXPECT_NEAR(y.data<float>()[i], std::tanh(double{x.data<float>()[i]}), 1e-6);

  Tensor gate_up = Random({3, 8}, 6), out = Zeros({3, 4});
  ASSERT_TRUE(ops::GatedActivation(ops::Activation::kSilu, gate_up, out).ok());
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t j = 0; j < 4; ++j) {
      const double g = gate_up.data<float>()[t * 8 + j], u = gate_up.data<float>()[t * 8 + 4 + j];
      EXPECT_NEAR(out.data<float>()[t * 4 + j], g / (1.0 + std::exp(-g)) * u, 1e-6);
    }
  }
  // GeGLU (ModernBERT, Gemma): gelu of the gate halves times the up halves.
  ASSERT_TRUE(ops::GatedActivation(ops::Activation::kGeluTanh, gate_up, out).ok());
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t j = 0; j < 4; ++j) {
      const double g = gate_up.data<float>()[t * 8 + j], u = gate_up.data<float>()[t * 8 + 4 + j];
      const double gelu = 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
      EXPECT_NEAR(out.data<float>()[t * 4 + j], gelu * u, 1e-6);
    }
  }
  Tensor narrow = Zeros({3, 3});
  EXPECT_FALSE(ops::GatedActivation(ops::Activation::kSilu, gate_up, narrow).ok());
  EXPECT_EQ(ops::ActivationFromName("gelu"), ops::Activation::kGeluErf);
  EXPECT_FALSE(ops::ActivationFromName("mish").has_value());
}

// Every activation, eight lanes at a time and in the scalar tail, across the range a model
// produces and beyond it (where exp saturates): within 1e-6 of double precision, relative
// to the value's size.
TEST(ActivationTest, EveryActivationOverItsRangeAndItsGatedForm) {
  std::vector<float> values;
  for (int i = -400; i <= 400; ++i) values.push_back(static_cast<float>(i) * 0.03f);
  for (const float extreme : {-200.0f, -90.0f, -30.0f, -1e-7f, 0.0f, 1e-7f, 30.0f, 90.0f, 200.0f}) values.push_back(extreme);
  const int64_t count = static_cast<int64_t>(values.size());  // 810: 101 vectors and a tail of 2
  Tensor x = Zeros({count}), y = Zeros({count});
  std::copy(values.begin(), values.end(), x.data<float>());
  const int64_t width = 20;  // a gated row: two vectors and a tail of 4
  Tensor gate_up = Random({3, 2 * width}, 7, 2.0f), gated = Zeros({3, width});
  for (const ops::Activation activation :
       {ops::Activation::kGeluErf, ops::Activation::kGeluTanh, ops::Activation::kRelu, ops::Activation::kSilu,
        ops::Activation::kTanh}) {
    ASSERT_TRUE(ops::Activate(activation, x, y).ok());
    for (int64_t i = 0; i < count; ++i) {
      const double expected = Activated(activation, values[i]);
      ASSERT_NEAR(y.data<float>()[i], expected, 1e-6 * (1.0 + std::abs(expected)))
          << "x " << values[i] << " activation " << static_cast<int>(activation);
    }
    ASSERT_TRUE(ops::GatedActivation(activation, gate_up, gated).ok());
    for (int64_t t = 0; t < 3; ++t) {
      for (int64_t j = 0; j < width; ++j) {
        const double g = gate_up.data<float>()[t * 2 * width + j], u = gate_up.data<float>()[t * 2 * width + width + j];
        const double expected = Activated(activation, g) * u;
        ASSERT_NEAR(gated.data<float>()[t * width + j], expected, 1e-6 * (1.0 + std::abs(expected)));
      }
    }
  }
}

TEST(NormTest, LayerNormWithResidualInPlace) {
  const int64_t rows = 6, n = 48;
  Tensor x = Random({rows, n}, 7, 2.0f), residual = Random({rows, n}, 8), gamma = Random({n}, 9), beta = Random({n}, 10);
  std::vector<float> sum(rows * n);
  for (int64_t i = 0; i < rows * n; ++i) sum[i] = x.data<float>()[i] + residual.data<float>()[i];
  ASSERT_TRUE(ops::LayerNorm(x, residual, gamma, beta, 1e-5f, residual).ok());  // output aliases residual
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0, variance = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += sum[r * n + i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) variance += (sum[r * n + i] - mean) * (sum[r * n + i] - mean);
    variance /= n;
    for (int64_t i = 0; i < n; ++i) {
      const double expected = (sum[r * n + i] - mean) / std::sqrt(variance + 1e-5) * gamma.data<float>()[i] +
                              beta.data<float>()[i];
      EXPECT_NEAR(residual.data<float>()[r * n + i], expected, 1e-5);
    }
  }
}

// ModernBERT's LayerNorms have no bias (norm_bias false): an empty beta means none.
TEST(NormTest, LayerNormWithoutBeta) {
  const int64_t rows = 4, n = 40;
  Tensor x = Random({rows, n}, 11, 2.0f), gamma = Random({n}, 12), out = Zeros({rows, n});
  ASSERT_TRUE(ops::LayerNorm(x, Tensor(), gamma, Tensor(), 1e-5f, out).ok());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0, variance = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += x.data<float>()[r * n + i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) variance += (x.data<float>()[r * n + i] - mean) * (x.data<float>()[r * n + i] - mean);
    variance /= n;
    for (int64_t i = 0; i < n; ++i) {
      const double expected = (x.data<float>()[r * n + i] - mean) / std::sqrt(variance + 1e-5) * gamma.data<float>()[i];
      EXPECT_NEAR(out.data<float>()[r * n + i], expected, 1e-5);
    }
  }
  Tensor short_beta = Random({n - 1}, 13);
  EXPECT_FALSE(ops::LayerNorm(x, Tensor(), gamma, short_beta, 1e-5f, out).ok());
}

TEST(NormTest, RmsNormAndPerHeadRmsNorm) {
  const int64_t rows = 4, n = 32;
  Tensor x = Random({rows, n}, 11), weight = Random({n}, 12), y = Zeros({rows, n});
  ASSERT_TRUE(ops::RmsNorm(x, weight, 1e-6f, y).ok());
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (int64_t i = 0; i < n; ++i) squares += double{x.data<float>()[r * n + i]} * x.data<float>()[r * n + i];
    const double inverse = 1.0 / std::sqrt(squares / n + 1e-6);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y.data<float>()[r * n + i], x.data<float>()[r * n + i] * inverse * weight.data<float>()[i], 1e-5);
    }
  }
  // Heads: 2 query, 1 key, 1 value of 8; values must stay as they were.
  const ops::QkvLayout layout{2, 1, 8};
  Tensor qkv = Random({3, layout.row_size()}, 13), original = Zeros({3, layout.row_size()});
  std::copy_n(qkv.data<float>(), qkv.NumElements(), original.data<float>());
  Tensor q_weight = Random({8}, 14), k_weight = Random({8}, 15);
  ASSERT_TRUE(ops::RmsNormHeads(qkv, layout, q_weight, k_weight, 1e-6f).ok());
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t head = 0; head < 4; ++head) {
      const float* before = original.data<float>() + t * 32 + head * 8;
      const float* after = qkv.data<float>() + t * 32 + head * 8;
      double squares = 0.0;
      for (int i = 0; i < 8; ++i) squares += double{before[i]} * before[i];
      const double inverse = 1.0 / std::sqrt(squares / 8 + 1e-6);
      for (int i = 0; i < 8; ++i) {
        const double w = head < 2 ? q_weight.data<float>()[i] : head == 2 ? k_weight.data<float>()[i] : 0.0;
        EXPECT_NEAR(after[i], head == 3 ? before[i] : before[i] * inverse * w, 1e-5);
      }
    }
  }
}

// JinaBERT qk-post-norm: one LayerNorm over each token's whole query (all its heads) and one over
// its whole key, in place in the packed qkv; values untouched.
TEST(NormTest, LayerNormOfWholeQueryAndKey) {
  const ops::QkvLayout layout{2, 1, 8};  // query 16 wide, key 8, value 8
  const int64_t tokens = 3, row = layout.row_size();
  Tensor qkv = Random({tokens, row}, 21, 2.0f), original = Zeros({tokens, row});
  std::copy_n(qkv.data<float>(), qkv.NumElements(), original.data<float>());
  Tensor q_gamma = Random({16}, 22), q_beta = Random({16}, 23), k_gamma = Random({8}, 24), k_beta = Random({8}, 25);
  ASSERT_TRUE(ops::LayerNormQueryKey(qkv, layout, q_gamma, q_beta, k_gamma, k_beta, 1e-12f).ok());
  struct Block {
    int64_t column, size;
    const Tensor& gamma;
    const Tensor& beta;
  };
  for (int64_t t = 0; t < tokens; ++t) {
    for (const Block& block : {Block{0, 16, q_gamma, q_beta}, Block{16, 8, k_gamma, k_beta}}) {
      const float* before = original.data<float>() + t * row + block.column;
      const float* after = qkv.data<float>() + t * row + block.column;
      double mean = 0.0, variance = 0.0;
      for (int64_t i = 0; i < block.size; ++i) mean += before[i];
      mean /= block.size;
      for (int64_t i = 0; i < block.size; ++i) variance += (before[i] - mean) * (before[i] - mean);
      variance /= block.size;
      for (int64_t i = 0; i < block.size; ++i) {
        const double expected =
            (before[i] - mean) / std::sqrt(variance + 1e-12) * block.gamma.data<float>()[i] + block.beta.data<float>()[i];
        EXPECT_NEAR(after[i], expected, 1e-5) << "token " << t << " column " << block.column + i;
      }
    }
    for (int64_t i = 24; i < row; ++i) EXPECT_EQ(qkv.data<float>()[t * row + i], original.data<float>()[t * row + i]);
  }
  // A key norm as wide as one head (Qwen3's per-head shape) is not this op's.
  EXPECT_FALSE(ops::LayerNormQueryKey(qkv, layout, q_gamma, q_beta, q_gamma, q_beta, 1e-12f).ok());
}

// Gemma3 norms a block's output and adds it to the residual stream in one op.
TEST(NormTest, RmsNormAccumulatesIntoOutput) {
  const int64_t rows = 5, n = 40;
  Tensor x = Random({rows, n}, 16, 3.0f), weight = Random({n}, 17), residual = Random({rows, n}, 18);
  std::vector<float> before(residual.data<float>(), residual.data<float>() + rows * n);
  ASSERT_TRUE(ops::RmsNorm(x, weight, 1e-6f, residual, /*accumulate=*/true).ok());
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (int64_t i = 0; i < n; ++i) squares += double{x.data<float>()[r * n + i]} * x.data<float>()[r * n + i];
    const double inverse = 1.0 / std::sqrt(squares / n + 1e-6);
    for (int64_t i = 0; i < n; ++i) {
      const double expected = before[r * n + i] + x.data<float>()[r * n + i] * inverse * weight.data<float>()[i];
      EXPECT_NEAR(residual.data<float>()[r * n + i], expected, 1e-5);
    }
  }
  // In place: x += RMSNorm(x).
  Tensor y = Random({rows, n}, 19);
  std::vector<float> original(y.data<float>(), y.data<float>() + rows * n);
  ASSERT_TRUE(ops::RmsNorm(y, weight, 1e-6f, y, /*accumulate=*/true).ok());
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (int64_t i = 0; i < n; ++i) squares += double{original[r * n + i]} * original[r * n + i];
    const double inverse = 1.0 / std::sqrt(squares / n + 1e-6);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y.data<float>()[r * n + i], original[r * n + i] * (1.0 + inverse * weight.data<float>()[i]), 1e-5);
    }
  }
}

// Reference attention in double for one ragged batch, straight from AttentionOptions' rule.
std::vector<double> ReferenceAttention(const Tensor& qkv, const std::vector<int32_t>& bounds, const ops::QkvLayout& layout,
                                       const ops::AttentionOptions& options) {
  const int64_t d = layout.head_dim, row = layout.row_size(), group = layout.num_heads / layout.num_kv_heads;
  const double scale = options.scale > 0.0f ? double{options.scale} : 1.0 / std::sqrt(double(d));
  std::vector<double> out(qkv.dim(0) * layout.num_heads * d, 0.0);
  const float* data = qkv.data<float>();
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    for (int64_t head = 0; head < layout.num_heads; ++head) {
      const int64_t k_off = (layout.num_heads + head / group) * d;
      const int64_t v_off = (layout.num_heads + layout.num_kv_heads + head / group) * d;
      for (int32_t i = bounds[s]; i < bounds[s + 1]; ++i) {
        std::vector<int32_t> keys;
        std::vector<double> scores;
        double maximum = -1e300;
        for (int32_t j = bounds[s]; j < bounds[s + 1]; ++j) {
          if (options.causal && j > i) continue;
          if (options.window > 0 && std::abs(j - i) >= options.window) continue;
          double dot = 0.0;
          for (int64_t c = 0; c < d; ++c) dot += double{data[i * row + head * d + c]} * data[j * row + k_off + c];
          double score = dot * scale;
          if (options.softcap > 0.0f) score = options.softcap * std::tanh(score / options.softcap);
          if (const ops::RelativePositionBias* bias = options.position_bias; bias != nullptr) {
            const int32_t bucket = ops::RelativePositionBucket(j - i, bias->num_buckets, bias->max_distance);
            score += bias->table.data<float>()[bucket * layout.num_heads + head];
          }
          if (const ops::DisentangledPositionBias* bias = options.disentangled_bias; bias != nullptr) {
            const int64_t columns = bias->projections.dim(1);
            const float* position = bias->projections.data<float>() + ops::DisentangledPositionIndex(i - j, *bias) * columns;
            double terms = 0.0;
            for (int64_t c = 0; c < d; ++c) {
              if (bias->key_column >= 0) terms += double{data[i * row + head * d + c]} * position[bias->key_column + head * d + c];
              if (bias->query_column >= 0) terms += double{data[j * row + k_off + c]} * position[bias->query_column + head * d + c];
            }
            score += terms * scale;
          }
          if (const ops::AlibiBias* alibi = options.alibi; alibi != nullptr) {
            score -= double{alibi->slopes.data<float>()[head]} * std::abs(j - i);
          }
          keys.push_back(j);
          scores.push_back(score);
          maximum = std::max(maximum, score);
        }
        double total = 0.0;
        for (double& score : scores) total += (score = std::exp(score - maximum));
        for (size_t k = 0; k < keys.size(); ++k) {
          for (int64_t c = 0; c < d; ++c) {
            out[(i * layout.num_heads + head) * d + c] += scores[k] / total * data[keys[k] * row + v_off + c];
          }
        }
      }
    }
  }
  return out;
}

class AttentionTest : public ::testing::TestWithParam<bool> {};

TEST_P(AttentionTest, RaggedGroupedQueryMatchesReference) {
  const bool causal = GetParam();
  const ops::QkvLayout layout{4, 2, 12};
  const std::vector<int32_t> bounds = {0, 1, 6, 15, 40};
  Tensor qkv = Random({40, layout.row_size()}, 16, 2.0f), out = Zeros({40, 48});
  ASSERT_TRUE(ops::Attention(qkv, Ints(bounds), layout, {.causal = causal}, out).ok());
  const std::vector<double> expected = ReferenceAttention(qkv, bounds, layout, {.causal = causal});
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(out.data<float>()[i], expected[i], 1e-5) << i;
}

INSTANTIATE_TEST_SUITE_P(CausalAndBidirectional, AttentionTest, ::testing::Bool());

// In bf16 on a CPU with AMX, bidirectional attention runs on tiles (amx_attention.h): queries,
// keys, values and the softmax numerators in bf16, sums in fp32. With every input already a
// bf16 value and a scale of 1/4 (exact in bf16), only the numerators' rounding separates the
// result from the double-precision reference: at most 2⁻⁹ of each weight, so 4e-3 of the
// largest value. Head sizes of whole and partial 16-column panels, sequences that end inside a
// 16-key panel and a 32-query block, one of 300 keys, grouped heads.
TEST(AttentionTest, BFloat16OnAmxTilesMatchesReference) {
  if (!cpu::DetectCpuPath().amx) GTEST_SKIP() << "no AMX on this CPU: " << cpu::DescribeCpuPath();
  for (const int64_t head_dim : {24, 32, 64}) {
    const ops::QkvLayout layout{4, 2, head_dim};
    const std::vector<int32_t> bounds = {0, 1, 7, 24, 41, 341};
    const int64_t tokens = bounds.back();
    Tensor qkv = Random({tokens, layout.row_size()}, 18, 1.5f), out = Zeros({tokens, 4 * head_dim});
    float largest = 0.0f;
    for (int64_t i = 0; i < qkv.NumElements(); ++i) {
      float& value = qkv.data<float>()[i];
      value = cpu::RoundToBFloat16(value);
      largest = std::max(largest, std::abs(value));
    }
    const ops::AttentionOptions options{.scale = 0.25f};
    {
      const cpu::MatrixPrecisionScope bfloat16(cpu::MatrixPrecision::kBFloat16);
      ASSERT_TRUE(ops::Attention(qkv, Ints(bounds), layout, options, out).ok());
    }
    const std::vector<double> expected = ReferenceAttention(qkv, bounds, layout, options);
    double largest_error = 0.0;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(out.data<float>()[i], expected[i], 4e-3 * largest) << "head_dim " << head_dim << " at " << i;
      largest_error = std::max(largest_error, std::abs(out.data<float>()[i] - expected[i]));
    }
    // The weights were rounded: the tiles ran, not the fp32 kernels.
    EXPECT_GT(largest_error, 1e-5) << "head_dim " << head_dim;
  }
}

// The vector paths: head sizes of whole 16- and 8-float column tiles (and a ragged 40 = 16 + 16
// + 8; on AVX-512, 64 and 48 for the tiles of four and one zmm per row), sequences that end inside a 6-query tile and inside a 16-key panel, and one long
// enough for many panels; bidirectional and causal, grouped heads.
TEST(AttentionTest, VectorTilesMatchReference) {
  for (const int64_t head_dim : {32, 40, 48, 64}) {
    for (const bool causal : {false, true}) {
      const ops::QkvLayout layout{4, 2, head_dim};
      const std::vector<int32_t> bounds = {0, 1, 7, 24, 41, 341};
      const int64_t tokens = bounds.back();
      Tensor qkv = Random({tokens, layout.row_size()}, 17, 1.5f), out = Zeros({tokens, 4 * head_dim});
      ASSERT_TRUE(ops::Attention(qkv, Ints(bounds), layout, {.causal = causal}, out).ok());
      const std::vector<double> expected = ReferenceAttention(qkv, bounds, layout, {.causal = causal});
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_NEAR(out.data<float>()[i], expected[i], 1e-5) << "head_dim " << head_dim << " causal " << causal << " at " << i;
      }
    }
  }
}

// Buckets of j − i as transformers' MPNetEncoder.relative_position_bucket(torch.arange(-300, 301))
// gives them (transformers 5.24, torch 2.15): keys before the query in 0..15, after it in
// 16..31. The distances 16, 32 and 64 sit exactly on bucket edges, where float32 rounding
// decides (they land on the upper bucket).
TEST(AttentionTest, RelativePositionBucketMatchesTransformers) {
  const std::vector<std::pair<int64_t, int32_t>> expected = {
      {0, 0},     {-1, 1},    {-7, 7},    {-8, 8},    {-11, 8},   {-12, 9},   {-15, 9},   {-16, 10},
      {-22, 10},  {-23, 11},  {-31, 11},  {-32, 12},  {-45, 12},  {-46, 13},  {-63, 13},  {-64, 14},
      {-90, 14},  {-91, 15},  {-128, 15}, {-300, 15}, {1, 17},    {7, 23},    {8, 24},    {11, 24},
      {12, 25},   {15, 25},   {16, 26},   {22, 26},   {23, 27},   {31, 27},   {32, 28},   {45, 28},
      {46, 29},   {63, 29},   {64, 30},   {90, 30},   {91, 31},   {128, 31},  {300, 31}};
  for (const auto& [relative_position, bucket] : expected) {
    EXPECT_EQ(ops::RelativePositionBucket(relative_position, 32, 128), bucket) << "j - i = " << relative_position;
  }
}

// transformers' make_log_bucket_position(torch.arange(-600, 601), buckets, max_position) at the
// edges (transformers 5.24, torch 2.15), relative_position = i − j: DeBERTa-v3's 256 / 512, the
// 32 / 512 of tiny-deberta-v3 and a 64 / 128 whose longest distances pass max_position.
TEST(AttentionTest, LogBucketPositionMatchesTransformers) {
  struct Case {
    int32_t buckets, max_position;
    std::vector<std::pair<int64_t, int32_t>> expected;
  };
  const std::vector<Case> cases = {
      {256, 512, {{-600, -270}, {-511, -255}, {-510, -255}, {-300, -207}, {-200, -169}, {-129, -129}, {-128, -128},
                  {-127, -127}, {-64, -64}, {-1, -1}, {0, 0}, {1, 1}, {64, 64}, {127, 127}, {128, 128}, {129, 129},
                  {130, 130}, {150, 143}, {200, 169}, {255, 192}, {256, 192}, {300, 207}, {400, 233}, {500, 254},
                  {509, 255}, {510, 255}, {511, 255}, {512, 256}, {600, 270}}},
      {32, 512, {{-600, -32}, {-511, -31}, {-510, -31}, {-300, -29}, {-200, -27}, {-129, -26}, {-128, -26},
                 {-127, -25}, {-64, -23}, {-1, -1}, {0, 0}, {1, 1}, {64, 23}, {127, 25}, {128, 26}, {129, 26},
                 {130, 26}, {150, 26}, {200, 27}, {255, 28}, {256, 29}, {300, 29}, {400, 30}, {500, 31},
                 {509, 31}, {510, 31}, {511, 31}, {512, 32}, {600, 32}}},
      {64, 128, {{-600, -98}, {-511, -95}, {-510, -95}, {-300, -83}, {-200, -74}, {-129, -64}, {-128, -64},
                 {-127, -63}, {-64, -48}, {-1, -1}, {0, 0}, {1, 1}, {64, 48}, {127, 63}, {128, 64}, {129, 64},
                 {130, 64}, {150, 67}, {200, 74}, {255, 79}, {256, 79}, {300, 83}, {400, 89}, {500, 94},
                 {509, 95}, {510, 95}, {511, 95}, {512, 95}, {600, 98}}},
  };
  for (const Case& c : cases) {
    for (const auto& [relative_position, bucket] : c.expected) {
      EXPECT_EQ(ops::LogBucketPosition(relative_position, c.buckets, c.max_position), bucket)
          << c.buckets << " / " << c.max_position << ", i - j = " << relative_position;
    }
  }
  // The row read: bucket + span, clamped to the 2 · span rows.
  const ops::DisentangledPositionBias bucketed{.span = 32, .position_buckets = 32, .max_relative_positions = 512};
  EXPECT_EQ(ops::DisentangledPositionIndex(-600, bucketed), 0);
  EXPECT_EQ(ops::DisentangledPositionIndex(-64, bucketed), 9);
  EXPECT_EQ(ops::DisentangledPositionIndex(600, bucketed), 63);  // 32 + 32, clamped to 63
  const ops::DisentangledPositionBias raw{.span = 48, .max_relative_positions = 48};
  EXPECT_EQ(ops::DisentangledPositionIndex(-47, raw), 1);
  EXPECT_EQ(ops::DisentangledPositionIndex(-60, raw), 0);
  EXPECT_EQ(ops::DisentangledPositionIndex(47, raw), 95);
  EXPECT_EQ(ops::DisentangledPositionIndex(60, raw), 95);
}

// DeBERTa's c2p and p2c terms, alone and together, log-bucketed and raw (both clamped: the
// 300-token sequence reaches past the span), with the projections' query and key columns apart
// as share_att_key lays them out, over ragged sequences, grouped heads and the vector paths.
TEST(AttentionTest, DisentangledBiasMatchesReference) {
  for (const int64_t head_dim : {12, 32, 40}) {
    const ops::QkvLayout layout{4, 2, head_dim};
    const int64_t width = layout.num_heads * head_dim;
    const std::vector<int32_t> bounds = {0, 1, 7, 24, 41, 341};
    const int64_t tokens = bounds.back();
    Tensor qkv = Random({tokens, layout.row_size()}, 23, 1.5f);
    for (const bool bucketed : {true, false}) {
      const int32_t span = bucketed ? 16 : 20;
      const Tensor projections = Random({2 * span, 2 * width + 8}, 29);
      for (const auto& [query_column, key_column] :
           {std::pair<int64_t, int64_t>{0, width + 8}, {-1, 3}, {5, -1}}) {
        const ops::DisentangledPositionBias bias{.projections = projections,
                                                 .query_column = query_column,
                                                 .key_column = key_column,
                                                 .span = span,
                                                 .position_buckets = bucketed ? 16 : 0,
                                                 .max_relative_positions = bucketed ? 64 : 20};
        const ops::AttentionOptions options{.scale = 0.15f, .disentangled_bias = &bias};
        Tensor out = Zeros({tokens, width});
        ASSERT_TRUE(ops::Attention(qkv, Ints(bounds), layout, options, out).ok());
        const std::vector<double> expected = ReferenceAttention(qkv, bounds, layout, options);
        for (size_t i = 0; i < expected.size(); ++i) {
          ASSERT_NEAR(out.data<float>()[i], expected[i], 1e-5) << "head_dim " << head_dim << " bucketed " << bucketed
                                                               << " columns " << query_column << "/" << key_column
                                                               << " at " << i;
        }
      }
    }
  }
}

// Windows (ModernBERT's |i − j| ≤ 2 as window 3, a causal sliding window), a scale, MPNet's
// position bias and all together, over ragged sequences with grouped-query heads; the long
// sequence (300 tokens, head_dim 32 and 40) puts windows across many 16-key panels and
// 6-query tiles.
TEST(AttentionTest, OptionsMatchReference) {
  const ops::QkvLayout layout{4, 2, 12};
  const Tensor table = Random({32, 4}, 18);
  const ops::RelativePositionBias bias{.table = table};
  const std::vector<ops::AttentionOptions> cases = {
      {.window = 3},
      {.causal = true, .window = 4},
      {.window = 1},
      {.scale = 0.3f},
      {.position_bias = &bias},
      {.causal = true, .position_bias = &bias},
      {.window = 7, .scale = 0.2f, .position_bias = &bias},
      {.causal = true, .window = 5, .scale = 0.25f, .position_bias = &bias},
  };
  for (const int64_t head_dim : {12, 32, 40}) {
    const ops::QkvLayout tested{layout.num_heads, layout.num_kv_heads, head_dim};
    const std::vector<int32_t> bounds = head_dim == 12 ? std::vector<int32_t>{0, 1, 6, 15, 40}
                                                       : std::vector<int32_t>{0, 1, 7, 24, 41, 341};
    const int64_t tokens = bounds.back();
    Tensor qkv = Random({tokens, tested.row_size()}, 19, 1.5f);
    for (size_t c = 0; c < cases.size(); ++c) {
      for (const int64_t window : {cases[c].window, cases[c].window > 0 ? cases[c].window * 5 : 0}) {
        ops::AttentionOptions options = cases[c];
        options.window = window;
        Tensor out = Zeros({tokens, 4 * head_dim});
        ASSERT_TRUE(ops::Attention(qkv, Ints(bounds), tested, options, out).ok());
        const std::vector<double> expected = ReferenceAttention(qkv, bounds, tested, options);
        for (size_t i = 0; i < expected.size(); ++i) {
          ASSERT_NEAR(out.data<float>()[i], expected[i], 1e-5) << "case " << c << " window " << window << " head_dim "
                                                               << head_dim << " at " << i;
        }
      }
    }
  }
}

// Gemma 2's logit soft-capping: each scaled score squashed to cap·tanh(s / cap) before the
// softmax, causal with and without a sliding window, over ragged sequences whose scores reach well
// past the cap (inputs of scale 3); without it the outputs are far from the capped reference.
// A position bias beside it, or a negative cap, is refused.
TEST(AttentionTest, SoftCapMatchesReference) {
  const ops::QkvLayout layout{4, 2, 16};
  const std::vector<int32_t> bounds = {0, 1, 9, 30, 130};
  Tensor qkv = Random({130, layout.row_size()}, 23, 3.0f);
  const std::vector<ops::AttentionOptions> cases = {
      {.causal = true, .scale = 0.2f, .softcap = 2.0f},
      {.causal = true, .window = 16, .scale = 0.2f, .softcap = 2.0f},
      {.softcap = 0.5f}};
  for (size_t c = 0; c < cases.size(); ++c) {
    Tensor out = Zeros({130, 64});
    ASSERT_TRUE(ops::Attention(qkv, Ints(bounds), layout, cases[c], out).ok());
    const std::vector<double> expected = ReferenceAttention(qkv, bounds, layout, cases[c]);
    ops::AttentionOptions uncapped = cases[c];
    uncapped.softcap = 0.0f;
    const std::vector<double> plain = ReferenceAttention(qkv, bounds, layout, uncapped);
    double apart = 0.0;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(out.data<float>()[i], expected[i], 1e-5) << "case " << c << " at " << i;
      apart = std::max(apart, std::abs(plain[i] - expected[i]));
    }
    EXPECT_GT(apart, 1e-2) << "case " << c << ": the cap must matter";
  }
  Tensor out = Zeros({130, 64});
  const Tensor table = Random({32, 4}, 18);
  const ops::RelativePositionBias bias{.table = table};
  const Status biased = ops::Attention(qkv, Ints(bounds), layout, {.softcap = 2.0f, .position_bias = &bias}, out);
  ASSERT_FALSE(biased.ok());
  EXPECT_NE(biased.message().find("soft-capping"), std::string::npos) << biased.message();
  EXPECT_FALSE(ops::Attention(qkv, Ints(bounds), layout, {.softcap = -1.0f}, out).ok());
}

// ALiBi (JinaBERT): −slope_h · |i − j| per head, over ragged sequences up to 341 tokens (where
// the far keys' numerators fall below the softmax's cutoff of e^−64), with windows and causal
// masks too, against the reference in double.
TEST(AttentionTest, AlibiMatchesReference) {
  for (const int64_t heads : {12, 6, 8}) {
    const ops::QkvLayout layout{heads, heads, 32};
    const std::vector<float> slopes = ops::AlibiSlopes(heads);
    Tensor table = Zeros({heads});
    std::copy(slopes.begin(), slopes.end(), table.data<float>());
    const ops::AlibiBias alibi{.slopes = table};
    const std::vector<int32_t> bounds = {0, 1, 7, 24, 41, 341};
    Tensor qkv = Random({341, layout.row_size()}, 41, 1.5f);
    const std::vector<ops::AttentionOptions> cases = {
        {.alibi = &alibi}, {.causal = true, .alibi = &alibi}, {.window = 9, .scale = 0.3f, .alibi = &alibi}};
    for (size_t c = 0; c < cases.size(); ++c) {
      Tensor out = Zeros({341, heads * 32});
      ASSERT_TRUE(ops::Attention(qkv, Ints(bounds), layout, cases[c], out).ok());
      const std::vector<double> expected = ReferenceAttention(qkv, bounds, layout, cases[c]);
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_NEAR(out.data<float>()[i], expected[i], 1e-5) << heads << " heads, case " << c << " at " << i;
      }
    }
  }
}

// One sequence with one key/value head (EmbeddingGemma's shape at batch 1) is split into blocks
// of queries, one per task; with four threads asked for, eight blocks, some of them empty for the
// short lengths. Causal, windowed and position-biased, as above.
TEST(AttentionTest, QueryBlocksOfOneKeyValueHeadMatchReference) {
  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(4);
  const ops::QkvLayout layout{3, 1, 32};
  const Tensor table = Random({32, 3}, 31);
  const ops::RelativePositionBias bias{.table = table};
  const std::vector<ops::AttentionOptions> cases = {
      {}, {.causal = true}, {.window = 9}, {.causal = true, .window = 20, .position_bias = &bias}};
  for (const int32_t length : {1, 5, 13, 100, 301}) {
    Tensor qkv = Random({length, layout.row_size()}, 37, 1.5f);
    for (size_t c = 0; c < cases.size(); ++c) {
      Tensor out = Zeros({length, 3 * 32});
      ASSERT_TRUE(ops::Attention(qkv, Ints({0, length}), layout, cases[c], out).ok());
      const std::vector<double> expected = ReferenceAttention(qkv, {0, length}, layout, cases[c]);
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_NEAR(out.data<float>()[i], expected[i], 1e-5) << "length " << length << " case " << c << " at " << i;
      }
    }
  }
  omp_set_num_threads(saved_threads);
}

TEST(AttentionTest, ValidatesArguments) {
  Tensor out24 = Zeros({4, 24}), out16 = Zeros({4, 16});
  EXPECT_FALSE(ops::Attention(Zeros({4, 40}), Ints({0, 4}), {3, 2, 8}, {}, out24).ok());  // 3 heads, 2 groups
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {}, out16).ok());  // output too wide
  Tensor out8 = Zeros({4, 8});
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.window = -1}, out8).ok());
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.scale = -0.5f}, out8).ok());
  const ops::RelativePositionBias wrong_heads{.table = Zeros({32, 2})};  // 2 heads for a 1-head layout
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.position_bias = &wrong_heads}, out8).ok());
  const ops::RelativePositionBias too_few_buckets{.table = Zeros({2, 1}), .num_buckets = 2};
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.position_bias = &too_few_buckets}, out8).ok());
  const ops::DisentangledPositionBias no_terms{.projections = Zeros({8, 8}), .span = 4, .max_relative_positions = 4};
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.disentangled_bias = &no_terms}, out8).ok());
  const ops::DisentangledPositionBias wrong_rows{
      .projections = Zeros({6, 8}), .key_column = 0, .span = 4, .max_relative_positions = 4};
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.disentangled_bias = &wrong_rows}, out8).ok());
  const ops::DisentangledPositionBias narrow{
      .projections = Zeros({8, 8}), .key_column = 1, .span = 4, .max_relative_positions = 4};
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.disentangled_bias = &narrow}, out8).ok());
  const ops::AlibiBias two_slopes{.slopes = Zeros({2})};  // 2 heads for a 1-head layout
  EXPECT_FALSE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.alibi = &two_slopes}, out8).ok());
  const ops::AlibiBias one_slope{.slopes = Zeros({1})};
  const ops::RelativePositionBias one_head{.table = Zeros({32, 1})};
  EXPECT_FALSE(
      ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.position_bias = &one_head, .alibi = &one_slope}, out8)
          .ok());
  EXPECT_TRUE(ops::Attention(Zeros({4, 24}), Ints({0, 4}), {1, 1, 8}, {.alibi = &one_slope}, out8).ok());
  const std::vector<int32_t> good = {0, 2, 5}, empty = {0, 0, 5}, short_end = {0, 2, 4}, decreasing = {0, 3, 2};
  EXPECT_TRUE(ops::ValidateCuSeqlens(good, 5, false).ok());
  EXPECT_FALSE(ops::ValidateCuSeqlens(empty, 5, false).ok());
  EXPECT_TRUE(ops::ValidateCuSeqlens(empty, 5, true).ok());
  EXPECT_FALSE(ops::ValidateCuSeqlens(short_end, 5, false).ok());
  EXPECT_FALSE(ops::ValidateCuSeqlens(decreasing, 2, true).ok());
}

TEST(RopeTest, RotatesQueriesAndKeysOnly) {
  const ops::QkvLayout layout{2, 1, 8};
  Tensor qkv = Random({3, layout.row_size()}, 17), original = Zeros({3, layout.row_size()});
  std::copy_n(qkv.data<float>(), qkv.NumElements(), original.data<float>());
  Tensor positions = Ints({0, 5, 130}), table = Zeros({3, 8});
  ASSERT_TRUE(ops::RopeTable(positions, 10000.0, table).ok());
  ASSERT_TRUE(ops::ApplyRope(qkv, layout, table).ok());
  for (int64_t t = 0; t < 3; ++t) {
    const double position = positions.data<int32_t>()[t];
    for (int64_t head = 0; head < 4; ++head) {
      const float* before = original.data<float>() + t * 32 + head * 8;
      const float* after = qkv.data<float>() + t * 32 + head * 8;
      for (int i = 0; i < 4; ++i) {
        const double angle = position * std::pow(10000.0, -2.0 * i / 8);
        const double first = before[i] * std::cos(angle) - before[i + 4] * std::sin(angle);
        const double second = before[i + 4] * std::cos(angle) + before[i] * std::sin(angle);
        EXPECT_NEAR(after[i], head == 3 ? before[i] : first, 1e-4);
        EXPECT_NEAR(after[i + 4], head == 3 ? before[i + 4] : second, 1e-4);
      }
    }
  }
}

// Partial rotary (NomicBERT's rotary_emb_fraction 0.5): a table of 4 of the 8 dimensions turns
// the pairs (0, 2) and (1, 3) of each query and key head by base^(-2i/4) and leaves 4..7 as
// they were; an odd or too wide table is refused.
TEST(RopeTest, NarrowTableRotatesTheLeadingDimensionsOnly) {
  const ops::QkvLayout layout{2, 1, 8};
  Tensor qkv = Random({2, layout.row_size()}, 19), original = Zeros({2, layout.row_size()});
  std::copy_n(qkv.data<float>(), qkv.NumElements(), original.data<float>());
  Tensor positions = Ints({3, 77}), table = Zeros({2, 4});
  ASSERT_TRUE(ops::RopeTable(positions, 10000.0, table).ok());
  ASSERT_TRUE(ops::ApplyRope(qkv, layout, table).ok());
  for (int64_t t = 0; t < 2; ++t) {
    const double position = positions.data<int32_t>()[t];
    for (int64_t head = 0; head < 4; ++head) {
      const float* before = original.data<float>() + t * 32 + head * 8;
      const float* after = qkv.data<float>() + t * 32 + head * 8;
      const bool turned = head < 3;
      for (int i = 0; i < 2; ++i) {
        const double angle = position * std::pow(10000.0, -2.0 * i / 4);
        EXPECT_NEAR(after[i], turned ? before[i] * std::cos(angle) - before[i + 2] * std::sin(angle) : before[i], 1e-4);
        EXPECT_NEAR(after[i + 2], turned ? before[i + 2] * std::cos(angle) + before[i] * std::sin(angle) : before[i + 2],
                    1e-4);
      }
      for (int i = 4; i < 8; ++i) EXPECT_EQ(after[i], before[i]) << "head " << head << " dimension " << i;
    }
  }
  Tensor odd = Zeros({2, 3}), wide = Zeros({2, 10});
  EXPECT_FALSE(ops::ApplyRope(qkv, layout, odd).ok());
  EXPECT_FALSE(ops::ApplyRope(qkv, layout, wide).ok());
}

// Dynamic NTK: in one step, a sequence within the trained length (4) keeps base^(-2i/d); one of
// 10 tokens rotates with base·(2·10/4 − 1)^(d/(d−2)); the table needs the boundaries.
TEST(RopeTest, DynamicNtkStretchesEachLongSequenceByItsOwnLength) {
  const ops::RopeScaling scaling{.factor = 2.0f, .original_max_position_embeddings = 4.0f,
                                 .type = ops::RopeScalingType::kDynamicNtk};
  Tensor positions = Ints({0, 1, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), table = Zeros({13, 8});
  Tensor bounds = Ints({0, 3, 13});
  ASSERT_TRUE(ops::RopeTable(positions, 10000.0, table, scaling, bounds).ok());
  const double stretched = 10000.0 * std::pow(2.0 * 10 / 4 - 1, 8.0 / 6);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(table.data<float>()[1 * 8 + 4 + i], std::sin(std::pow(10000.0, -2.0 * i / 8)), 1e-6) << i;
    EXPECT_NEAR(table.data<float>()[4 * 8 + 4 + i], std::sin(std::pow(stretched, -2.0 * i / 8)), 1e-6) << i;
  }
  Tensor without = Zeros({13, 8});
  EXPECT_FALSE(ops::RopeTable(positions, 10000.0, without, scaling).ok());
}

TEST(EmbeddingTest, GathersScalesAccumulatesAndRejectsOutOfRangeIds) {
  Tensor table = Random({5, 6}, 18), out = Zeros({3, 6});
  ASSERT_TRUE(ops::Gather(table, Ints({4, 0, 4}), out).ok());
  ASSERT_TRUE(ops::Gather(table, Ints({1, 1, 1}), out, /*accumulate=*/true).ok());
  for (int i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ(out.data<float>()[i], table.data<float>()[24 + i] + table.data<float>()[6 + i]);
    EXPECT_FLOAT_EQ(out.data<float>()[6 + i], table.data<float>()[i] + table.data<float>()[6 + i]);
  }
  // Gemma's embedding scale (a product may be fused into the sum: a rounding apart).
  const float scale = 27.712812f;
  ASSERT_TRUE(ops::Gather(table, Ints({2, 3, 2}), out, /*accumulate=*/false, scale).ok());
  ASSERT_TRUE(ops::Gather(table, Ints({0, 0, 1}), out, /*accumulate=*/true, scale).ok());
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(out.data<float>()[6 + i], table.data<float>()[18 + i] * scale + table.data<float>()[i] * scale, 1e-4);
    EXPECT_NEAR(out.data<float>()[12 + i], table.data<float>()[12 + i] * scale + table.data<float>()[6 + i] * scale, 1e-4);
  }
  Status status = ops::Gather(table, Ints({0, 5, 1}), out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("id 5 at index 1"), std::string::npos) << status.message();
  EXPECT_FALSE(ops::Gather(table, Ints({-1, 0, 0}), out).ok());
}

TEST(PoolingTest, PoolsEachSequenceAndNormalizes) {
  Tensor hidden = Random({6, 4}, 19), cu = Ints({0, 1, 4, 6});
  const float* h = hidden.data<float>();
  for (ops::PoolingMode mode : {ops::PoolingMode::kCls, ops::PoolingMode::kMean, ops::PoolingMode::kMax,
                                ops::PoolingMode::kLastToken, ops::PoolingMode::kWeightedMean,
                                ops::PoolingMode::kMeanSqrtLen}) {
    Tensor out = Zeros({3, 3});  // Matryoshka: leading 3 of 4 columns
    ASSERT_TRUE(ops::Pool(hidden, cu, mode, out).ok());
    const int32_t bounds[] = {0, 1, 4, 6};
    for (int s = 0; s < 3; ++s) {
      for (int c = 0; c < 3; ++c) {
        double expected = mode == ops::PoolingMode::kCls         ? h[bounds[s] * 4 + c]
                          : mode == ops::PoolingMode::kLastToken ? h[(bounds[s + 1] - 1) * 4 + c]
                          : mode == ops::PoolingMode::kMax       ? -1e30
                                                                 : 0.0;
        const double length = bounds[s + 1] - bounds[s];
        for (int t = bounds[s]; t < bounds[s + 1]; ++t) {
          if (mode == ops::PoolingMode::kMax) expected = std::max<double>(expected, h[t * 4 + c]);
          if (mode == ops::PoolingMode::kMean) expected += h[t * 4 + c] / length;
          if (mode == ops::PoolingMode::kMeanSqrtLen) expected += h[t * 4 + c] / std::sqrt(length);
          // sentence-transformers' weights 1..n, divided by their sum n(n + 1)/2.
          if (mode == ops::PoolingMode::kWeightedMean) {
            expected += (t - bounds[s] + 1) * h[t * 4 + c] / (length * (length + 1) / 2);
          }
        }
        EXPECT_NEAR(out.data<float>()[s * 3 + c], expected, 1e-6) << ops::PoolingModeName(mode);
      }
    }
  }
  Tensor vectors = Random({2, 5}, 20);
  std::fill_n(vectors.data<float>() + 5, 5, 0.0f);
  ASSERT_TRUE(ops::L2Normalize(vectors, vectors).ok());
  double norm = 0.0;
  for (int i = 0; i < 5; ++i) norm += double{vectors.data<float>()[i]} * vectors.data<float>()[i];
  EXPECT_NEAR(norm, 1.0, 1e-6);
  for (int i = 5; i < 10; ++i) EXPECT_EQ(vectors.data<float>()[i], 0.0f);  // zero stays zero, no NaN
  Tensor too_wide = Zeros({3, 5});
  EXPECT_FALSE(ops::Pool(hidden, cu, ops::PoolingMode::kCls, too_wide).ok());
  EXPECT_EQ(ops::PoolingModeFromName("lasttoken"), ops::PoolingMode::kLastToken);
  EXPECT_EQ(ops::PoolingModeFromName("weightedmean"), ops::PoolingMode::kWeightedMean);
  EXPECT_EQ(ops::PoolingModeFromName("mean_sqrt_len_tokens"), ops::PoolingMode::kMeanSqrtLen);
  Tensor pooled = Zeros({3, 4});
  EXPECT_FALSE(ops::Pool(hidden, cu, ops::PoolingMode::kSplade, pooled).ok());  // SpladePool's job
}

// SPLADE over slices of the tokens: zeroed output, then slices [0, 3) and [3, 7) whose
// boundary falls inside the second sequence, against max over tokens of log(1 + relu(x)).
TEST(PoolingTest, SpladePoolFoldsSlicesIntoEachSequence) {
  Tensor logits = Random({7, 5}, 23), cu = Ints({0, 2, 7});
  // Word 4 is negative at every token: relu leaves nothing, so it must stay exactly 0.
  for (int t = 0; t < 7; ++t) logits.data<float>()[t * 5 + 4] = -0.1f - std::abs(logits.data<float>()[t * 5 + 4]);
  const float* x = logits.data<float>();
  Tensor out = Zeros({2, 5});
  ASSERT_TRUE(ops::SpladePool(logits.Rows(0, 3), cu, 0, out).ok());
  ASSERT_TRUE(ops::SpladePool(logits.Rows(3, 7), cu, 3, out).ok());
  const int32_t bounds[] = {0, 2, 7};
  int positives = 0;
  for (int s = 0; s < 2; ++s) {
    for (int v = 0; v < 5; ++v) {
      double expected = 0.0;
      for (int t = bounds[s]; t < bounds[s + 1]; ++t) expected = std::max(expected, std::log1p(std::max(0.0, double{x[t * 5 + v]})));
      positives += expected > 0;
      EXPECT_NEAR(out.data<float>()[s * 5 + v], expected, 1e-6) << s << " " << v;
    }
  }
  EXPECT_GT(positives, 3);
  EXPECT_EQ(out.data<float>()[4], 0.0f);
  EXPECT_EQ(out.data<float>()[9], 0.0f);
  Tensor narrow = Zeros({2, 4});
  EXPECT_FALSE(ops::SpladePool(logits, cu, 0, narrow).ok());
}

TEST(ConvertTest, RoundsToNearestEven) {
  Tensor source = Zeros({6});
  const float values[] = {1.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, 65520.0f, 1e-8f};
  std::copy(values, values + 6, source.data<float>());
  Tensor bf16 = Zeros({6}, DataType::kBF16), f16 = Zeros({6}, DataType::kF16), back = Zeros({6});
  ASSERT_TRUE(ops::Convert(source, bf16).ok());
  ASSERT_TRUE(ops::Convert(bf16, back).ok());
  EXPECT_EQ(back.data<float>()[1], 1.0f);               // tie goes to even
  EXPECT_EQ(back.data<float>()[2], 1.0f + 4.0f / 256);  // tie goes to even (up)
  EXPECT_EQ(back.data<float>()[3], -2.5f);
  ASSERT_TRUE(ops::Convert(source, f16).ok());
  ASSERT_TRUE(ops::Convert(f16, back).ok());
  EXPECT_EQ(back.data<float>()[0], 1.0f);
  EXPECT_EQ(back.data<float>()[1], 1.0f + 1.0f / 256);  // exact in F16
  EXPECT_TRUE(std::isinf(back.data<float>()[4]));
  EXPECT_EQ(back.data<float>()[5], 0.0f);
  EXPECT_FALSE(ops::Convert(Zeros({6}, DataType::kI64), back).ok());
}

// The router's logits are fp32 products even where the engine multiplies in bf16: a bf16
// product would be off by ~1e-2 here and could flip which experts a token goes to.
TEST(ExpertsTest, LogitsAreFloat32ProductsUnderBFloat16) {
  const Tensor input = Random({5, 96}, 31);
  const Tensor router = Random({8, 96}, 32);
  Tensor logits = Zeros({5, 8});
  const cpu::MatrixPrecisionScope bfloat16(cpu::MatrixPrecision::kBFloat16);
  ASSERT_TRUE(ops::ExpertLogits(input, router, logits).ok());
  for (int64_t t = 0; t < 5; ++t) {
    for (int64_t e = 0; e < 8; ++e) {
      double expected = 0.0;
      for (int64_t h = 0; h < 96; ++h) expected += double{input.data<float>()[t * 96 + h]} * router.data<float>()[e * 96 + h];
      EXPECT_NEAR(logits.data<float>()[t * 8 + e], expected, 1e-4) << t << ", " << e;
    }
  }
}

// output[t] = bias + Σ_k weights[t, k] · rows[positions[t, k]]; a position outside the rows is
// an error naming it, not a read out of bounds.
TEST(ExpertsTest, CombineAddsEachTokensWeightedRowsAndTheBias) {
  const Tensor rows = Random({6, 10}, 33);
  const Tensor bias = Random({10}, 34);
  Tensor positions = Zeros({3, 2}, DataType::kI32);
  const int32_t chosen[] = {5, 0, 1, 4, 3, 2};
  std::memcpy(positions.data<int32_t>(), chosen, sizeof(chosen));
  Tensor weights = Random({3, 2}, 35);
  Tensor output = Zeros({3, 10});
  ASSERT_TRUE(ops::CombineExperts(rows, positions, weights, bias, output).ok());
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t j = 0; j < 10; ++j) {
      double expected = bias.data<float>()[j];
      for (int64_t k = 0; k < 2; ++k) {
        expected += double{weights.data<float>()[t * 2 + k]} * rows.data<float>()[chosen[t * 2 + k] * 10 + j];
      }
      EXPECT_NEAR(output.data<float>()[t * 10 + j], expected, 1e-5);
    }
  }
  positions.data<int32_t>()[3] = 6;
  const Status outside = ops::CombineExperts(rows, positions, weights, bias, output);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.message().find("position 6"), std::string::npos) << outside.message();
  EXPECT_FALSE(ops::CombineExperts(rows, positions, weights, Random({9}, 36), output).ok());
}

}  // namespace
}  // namespace stamen::engine
