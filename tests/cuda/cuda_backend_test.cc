// The CUDA backend against the CPU backend. Kernel tests feed both backends the same random
// inputs (rounded to bf16 first, so only the arithmetic differs) and require a relative error
// ‖gpu − cpu‖ / ‖cpu‖ ≤ 1e-2. Model tests load each model on both devices and require a
// cosine similarity ≥ 0.999 per output vector, then check the CUDA graph path (eager, capture,
// replay) gives the same values. Without a GPU (or a build without the backend) every test
// that needs one reports SKIPPED with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/models/model.h"
#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/convert.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/pooling.h"
#include "engine/ops/rope.h"

#if STAMEN_WITH_CUDA
#include "engine/cuda/context.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/runtime.h"
#endif

namespace stamen::engine {
namespace {

constexpr double kKernelTolerance = 1e-2;
constexpr double kCosineFloor = 0.999;

// Empty when a GPU test can run, else why not.
std::string WhyNoGpu() {
#if STAMEN_WITH_CUDA
  std::string why;
  if (cuda::DeviceCount(&why) == 0) return "no CUDA device: " + why;
  return "";
#else
  return "this build has no CUDA backend";
#endif
}

TEST(CudaEngineTest, LoadWithoutGpuFailsWithAClearError) {
  if (WhyNoGpu().empty()) GTEST_SKIP() << "a GPU is present";
  auto engine = Engine::Load("/nonexistent-model-folder", {.device = Device::kCuda});
  ASSERT_FALSE(engine.ok());
  // The folder is read first; a missing folder is the first error either way, so check the
  // device error with a folder that loads on the CPU when one is around.
  const std::string golden = std::string(STAMEN_SHARED_DIR) + "/models/golden/tiny-bert";
  if (std::filesystem::exists(golden + "/config.json")) {
    auto on_cuda = Engine::Load(golden, {.device = Device::kCuda});
    ASSERT_FALSE(on_cuda.ok());
    EXPECT_NE(on_cuda.status().message().find("cannot run on cuda"), std::string::npos) << on_cuda.status().message();
  }
}

#if STAMEN_WITH_CUDA

// ---- helpers ----

// Random F32 host tensor, values rounded to bf16 so both backends see identical inputs.
Tensor Random(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
  Tensor tensor = *Tensor::Allocate(DataType::kF32, shape);
  std::normal_distribution<float> normal(0.0f, scale);
  for (int64_t i = 0; i < tensor.NumElements(); ++i) tensor.data<float>()[i] = normal(rng);
  Tensor rounded = *Tensor::Allocate(DataType::kBF16, shape);
  EXPECT_TRUE(ops::Convert(tensor, rounded).ok());
  EXPECT_TRUE(ops::Convert(rounded, tensor).ok());
  return tensor;
}

// A host F32 tensor on the device as BF16 (or as-is for I32 and F32 tables).
Tensor ToDevice(const Tensor& host, DataType type = DataType::kBF16) {
  if (host.dtype() != DataType::kF32) type = host.dtype();
  auto placed = model_weights::Place(host, {Device::kCuda, type});
  EXPECT_TRUE(placed.ok()) << placed.status().message();
  return placed.ok() ? *placed : Tensor();
}

Tensor ToHost(const Tensor& device) {
  Tensor copy = *Tensor::Allocate(device.dtype(), device.shape());
  Status status = CopyTensor(device, copy);
  EXPECT_TRUE(status.ok()) << status.message();
  if (copy.dtype() == DataType::kF32 || copy.dtype() == DataType::kI32) return copy;
  Tensor wide = *Tensor::Allocate(DataType::kF32, device.shape());
  EXPECT_TRUE(ops::Convert(copy, wide).ok());
  return wide;
}

Tensor Empty(DataType type, const Shape& shape, Device device) {
  auto tensor = Tensor::Allocate(type, shape, device);
  EXPECT_TRUE(tensor.ok()) << tensor.status().message();
  return tensor.ok() ? *tensor : Tensor();
}

Tensor Ints(const std::vector<int32_t>& values) {
  Tensor tensor = *Tensor::Allocate(DataType::kI32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), tensor.data<int32_t>());
  return tensor;
}

double RelativeError(const Tensor& expected, const Tensor& actual) {
  EXPECT_EQ(expected.NumElements(), actual.NumElements());
  double difference = 0.0;
  double norm = 0.0;
  for (int64_t i = 0; i < expected.NumElements() && i < actual.NumElements(); ++i) {
    const double e = expected.data<float>()[i];
    const double a = actual.data<float>()[i];
    if (!std::isfinite(a)) return INFINITY;
    difference += (a - e) * (a - e);
    norm += e * e;
  }
  return std::sqrt(difference) / std::max(std::sqrt(norm), 1e-30);
}

class CudaKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = WhyNoGpu();
    if (!why.empty()) GTEST_SKIP() << why;
    auto context = cuda::Context::Create(0);
    ASSERT_TRUE(context.ok()) << context.status().message();
    context_ = std::move(context.value());
    scope_ = std::make_unique<cuda::ScopedContext>(context_.get());
  }
  void TearDown() override {
    if (context_ != nullptr) EXPECT_TRUE(context_->Synchronize().ok());
    scope_.reset();
    context_.reset();
  }
  std::mt19937 rng_{20240611};
  std::unique_ptr<cuda::Context> context_;
  std::unique_ptr<cuda::ScopedContext> scope_;
};

#define EXPECT_CLOSE(expected, actual, what)                                       \
  do {                                                                             \
    const double error_ = RelativeError((expected), (actual));                     \
    EXPECT_LE(error_, kKernelTolerance) << what;                                   \
    std::cout << "[ cuda     ] " << what << ": relative error " << error_ << "\n"; \
  } while (0)

// ---- kernels ----

TEST_F(CudaKernelTest, ConvertRoundTrips) {
  const Tensor host = Random({33, 70}, rng_);
  const Tensor device = ToDevice(host);
  Tensor wide = Empty(DataType::kF32, host.shape(), Device::kCuda);
  ASSERT_TRUE(ops::Convert(device, wide).ok());
  EXPECT_CLOSE(host, ToHost(wide), "convert");
  EXPECT_EQ(RelativeError(host, ToHost(wide)), 0.0);  // bf16-exact inputs survive exactly
}

TEST_F(CudaKernelTest, GemmMatchesCpuWithEveryEpilogue) {
  const int64_t m = 37, k = 96, n = 80;
  const Tensor x = Random({m, k}, rng_);
  const Tensor w = Random({n, k}, rng_, 0.1f);
  const Tensor b = Random({n}, rng_);
  const Tensor x_d = ToDevice(x), w_d = ToDevice(w), b_d = ToDevice(b);
  for (ops::Activation activation : {ops::Activation::kIdentity, ops::Activation::kGeluErf, ops::Activation::kGeluTanh,
                                     ops::Activation::kRelu, ops::Activation::kSilu, ops::Activation::kTanh}) {
    for (bool with_bias : {false, true}) {
      Tensor expected = *Tensor::Allocate(DataType::kF32, {m, n});
      ASSERT_TRUE(ops::Gemm(x, w, with_bias ? b : Tensor(), expected, {.activation = activation}).ok());
      Tensor actual = Empty(DataType::kBF16, {m, n}, Device::kCuda);
      Status status = ops::Gemm(x_d, w_d, with_bias ? b_d : Tensor(), actual, {.activation = activation});
      ASSERT_TRUE(status.ok()) << status.message();
      std::ostringstream what;
      what << "gemm activation " << static_cast<int>(activation) << (with_bias ? " bias" : "");
      EXPECT_CLOSE(expected, ToHost(actual), what.str());
      Tensor reference = Empty(DataType::kBF16, {m, n}, Device::kCuda);
      ASSERT_TRUE(cuda::ReferenceGemm(x_d, w_d, with_bias ? b_d : Tensor(), reference, {.activation = activation}).ok());
      EXPECT_CLOSE(expected, ToHost(reference), what.str() + " (reference kernel)");
    }
  }
  // Accumulate into a residual.
  const Tensor residual = Random({m, n}, rng_);
  Tensor expected = residual;
  expected = *Tensor::Allocate(DataType::kF32, {m, n});
  ASSERT_TRUE(CopyTensor(residual, expected).ok());
  ASSERT_TRUE(ops::Gemm(x, w, b, expected, {.accumulate = true}).ok());
  Tensor actual = ToDevice(residual);
  ASSERT_TRUE(ops::Gemm(x_d, w_d, b_d, actual, {.accumulate = true}).ok());
  EXPECT_CLOSE(expected, ToHost(actual), "gemm accumulate");
}

TEST_F(CudaKernelTest, ActivationsAndGatedActivations) {
  const Tensor x = Random({19, 130}, rng_, 2.0f);
  for (ops::Activation activation : {ops::Activation::kGeluErf, ops::Activation::kGeluTanh, ops::Activation::kRelu,
                                     ops::Activation::kSilu, ops::Activation::kTanh}) {
    Tensor expected = *Tensor::Allocate(DataType::kF32, x.shape());
    ASSERT_TRUE(ops::Activate(activation, x, expected).ok());
    Tensor actual = Empty(DataType::kBF16, x.shape(), Device::kCuda);
    ASSERT_TRUE(ops::Activate(activation, ToDevice(x), actual).ok());
    EXPECT_CLOSE(expected, ToHost(actual), "activate " + std::to_string(static_cast<int>(activation)));
  }
  for (ops::Activation activation : {ops::Activation::kSilu, ops::Activation::kGeluTanh}) {
    Tensor expected = *Tensor::Allocate(DataType::kF32, {19, 65});
    ASSERT_TRUE(ops::GatedActivation(activation, x, expected).ok());
    Tensor actual = Empty(DataType::kBF16, {19, 65}, Device::kCuda);
    ASSERT_TRUE(ops::GatedActivation(activation, ToDevice(x), actual).ok());
    EXPECT_CLOSE(expected, ToHost(actual), "gated activation " + std::to_string(static_cast<int>(activation)));
  }
}

TEST_F(CudaKernelTest, Norms) {
  for (int64_t n : {64, 384, 1000, 4096}) {
    const Tensor x = Random({23, n}, rng_, 3.0f);
    const Tensor residual = Random({23, n}, rng_);
    const Tensor gamma = Random({n}, rng_);
    const Tensor beta = Random({n}, rng_);
    Tensor expected = *Tensor::Allocate(DataType::kF32, x.shape());
    ASSERT_TRUE(ops::LayerNorm(x, residual, gamma, beta, 1e-5f, expected).ok());
    Tensor actual = ToDevice(x);  // in place, as the models run it
    ASSERT_TRUE(ops::LayerNorm(actual, ToDevice(residual), ToDevice(gamma), ToDevice(beta), 1e-5f, actual).ok());
    EXPECT_CLOSE(expected, ToHost(actual), "layer_norm n=" + std::to_string(n));
    // No beta (ModernBERT's norm_bias false), no residual.
    ASSERT_TRUE(ops::LayerNorm(x, Tensor(), gamma, Tensor(), 1e-5f, expected).ok());
    Tensor unbiased = ToDevice(x);
    ASSERT_TRUE(ops::LayerNorm(unbiased, Tensor(), ToDevice(gamma), Tensor(), 1e-5f, unbiased).ok());
    EXPECT_CLOSE(expected, ToHost(unbiased), "layer_norm without beta n=" + std::to_string(n));

    ASSERT_TRUE(ops::RmsNorm(x, gamma, 1e-6f, expected).ok());
    Tensor rms = Empty(DataType::kBF16, x.shape(), Device::kCuda);
    ASSERT_TRUE(ops::RmsNorm(ToDevice(x), ToDevice(gamma), 1e-6f, rms).ok());
    EXPECT_CLOSE(expected, ToHost(rms), "rms_norm n=" + std::to_string(n));
  }
  const ops::QkvLayout layout{8, 2, 64};
  Tensor qkv = Random({29, layout.row_size()}, rng_, 2.0f);
  const Tensor q_weight = Random({64}, rng_);
  const Tensor k_weight = Random({64}, rng_);
  Tensor device = ToDevice(qkv);
  ASSERT_TRUE(ops::RmsNormHeads(device, layout, ToDevice(q_weight), ToDevice(k_weight), 1e-6f).ok());
  ASSERT_TRUE(ops::RmsNormHeads(qkv, layout, q_weight, k_weight, 1e-6f).ok());
  EXPECT_CLOSE(qkv, ToHost(device), "rms_norm_heads");
}

TEST_F(CudaKernelTest, RotaryEmbedding) {
  const std::vector<int32_t> positions_host = {0, 1, 2, 3, 0, 1, 511, 4095, 7, 100};
  const Tensor positions = Ints(positions_host);
  const int64_t d = 128;
  Tensor expected_table = *Tensor::Allocate(DataType::kF32, {10, d});
  ASSERT_TRUE(ops::RopeTable(positions, 1e6, expected_table).ok());
  Tensor table = Empty(DataType::kF32, {10, d}, Device::kCuda);
  ASSERT_TRUE(ops::RopeTable(ToDevice(positions), 1e6, table).ok());
  EXPECT_CLOSE(expected_table, ToHost(table), "rope_table");
  const ops::QkvLayout layout{4, 2, d};
  Tensor qkv = Random({10, layout.row_size()}, rng_);
  Tensor device = ToDevice(qkv);
  ASSERT_TRUE(ops::ApplyRope(device, layout, table).ok());
  ASSERT_TRUE(ops::ApplyRope(qkv, layout, expected_table).ok());
  EXPECT_CLOSE(qkv, ToHost(device), "apply_rope");
}

TEST_F(CudaKernelTest, EmbeddingsAndPositions) {
  const Tensor table = Random({50, 96}, rng_);
  const Tensor extra = Random({3, 96}, rng_);
  const Tensor ids = Ints({0, 49, 7, 7, 12, 3});
  const Tensor types = Ints({0, 1, 2, 0, 1, 2});
  Tensor expected = *Tensor::Allocate(DataType::kF32, {6, 96});
  ASSERT_TRUE(ops::Gather(table, ids, expected).ok());
  ASSERT_TRUE(ops::Gather(extra, types, expected, true).ok());
  Tensor actual = Empty(DataType::kBF16, {6, 96}, Device::kCuda);
  ASSERT_TRUE(ops::Gather(ToDevice(table), ToDevice(ids), actual).ok());
  ASSERT_TRUE(ops::Gather(ToDevice(extra), ToDevice(types), actual, true).ok());
  EXPECT_CLOSE(expected, ToHost(actual), "gather");

  const Tensor bounds = Ints({0, 3, 4, 9});
  Tensor expected_positions = *Tensor::Allocate(DataType::kI32, {12});  // 3 padding tokens
  ASSERT_TRUE(ops::SequencePositions(bounds, 2, expected_positions).ok());
  Tensor positions = Empty(DataType::kI32, {12}, Device::kCuda);
  ASSERT_TRUE(ops::SequencePositions(ToDevice(bounds), 2, positions).ok());
  const Tensor got = ToHost(positions);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(got.data<int32_t>()[i], expected_positions.data<int32_t>()[i]) << i;
}

struct AttentionCase {
  ops::QkvLayout layout;
  bool causal;
  std::vector<int32_t> lengths;
};

TEST_F(CudaKernelTest, RaggedAttentionUnevenLengthsAndGroupedHeads) {
  const std::vector<AttentionCase> cases = {
      {{4, 4, 64}, false, {1, 7, 33, 64, 100, 129}},
      {{4, 4, 64}, true, {1, 7, 33, 64, 100, 129}},
      {{16, 8, 128}, true, {200, 1, 65}},    // Qwen3-0.6B heads
      {{8, 2, 64}, false, {31, 32, 33, 300}},  // grouped-query, 4 queries per kv head
      {{12, 12, 32}, false, {5, 513}},
      {{4, 2, 16}, true, {3, 16, 130}},  // tiny-qwen2 heads
      {{2, 1, 256}, false, {70, 2}},
  };
  for (const AttentionCase& test : cases) {
    std::vector<int32_t> bounds = {0};
    for (int32_t length : test.lengths) bounds.push_back(bounds.back() + length);
    const int64_t tokens = bounds.back();
    const Tensor qkv = Random({tokens, test.layout.row_size()}, rng_, 1.5f);
    const Tensor cu = Ints(bounds);
    const int64_t width = test.layout.num_heads * test.layout.head_dim;
    Tensor expected = *Tensor::Allocate(DataType::kF32, {tokens, width});
    ASSERT_TRUE(ops::Attention(qkv, cu, test.layout, {.causal = test.causal}, expected).ok());
    Tensor actual = Empty(DataType::kBF16, {tokens, width}, Device::kCuda);
    Status status = ops::Attention(ToDevice(qkv), ToDevice(cu), test.layout, {.causal = test.causal}, actual);
    ASSERT_TRUE(status.ok()) << status.message();
    std::ostringstream what;
    what << "attention heads " << test.layout.num_heads << "/" << test.layout.num_kv_heads << " d "
         << test.layout.head_dim << (test.causal ? " causal" : " bidirectional") << " tokens " << tokens;
    EXPECT_CLOSE(expected, ToHost(actual), what.str());
  }
}

// Packs `lengths` into one ragged batch: random qkv for `layout` and its cu_seqlens.
struct RaggedBatch {
  Tensor qkv;
  Tensor cu_seqlens;
  int64_t tokens = 0;
};

RaggedBatch MakeRaggedBatch(const ops::QkvLayout& layout, const std::vector<int32_t>& lengths, std::mt19937& rng) {
  std::vector<int32_t> bounds = {0};
  for (int32_t length : lengths) bounds.push_back(bounds.back() + length);
  RaggedBatch batch;
  batch.tokens = bounds.back();
  batch.qkv = Random({batch.tokens, layout.row_size()}, rng, 1.5f);
  batch.cu_seqlens = Ints(bounds);
  return batch;
}

// Runs `options` on both backends over `batch` (the position tables of `options` on the host,
// those of `device_options` on the GPU) and compares.
void ExpectAttentionMatchesCpu(const RaggedBatch& batch, const ops::QkvLayout& layout,
                               const ops::AttentionOptions& options, const ops::AttentionOptions& device_options,
                               const std::string& what) {
  const int64_t width = layout.num_heads * layout.head_dim;
  Tensor expected = *Tensor::Allocate(DataType::kF32, {batch.tokens, width});
  Status status = ops::Attention(batch.qkv, batch.cu_seqlens, layout, options, expected);
  ASSERT_TRUE(status.ok()) << what << ": " << status.message();
  Tensor actual = Empty(DataType::kBF16, {batch.tokens, width}, Device::kCuda);
  status = ops::Attention(ToDevice(batch.qkv), ToDevice(batch.cu_seqlens), layout, device_options, actual);
  ASSERT_TRUE(status.ok()) << what << ": " << status.message();
  EXPECT_CLOSE(expected, ToHost(actual), what);
}

// MPNet's relative position bias (32 buckets, max_distance 128) over sequences shorter and
// longer than the largest bucket's distance (300: offsets past 128 share the last bucket) and
// across several 32-query / 64-key tiles, with MPNet's head_dim 64; bidirectional as MPNet
// runs it, and with the causal and window limits the kernel also offers.
TEST_F(CudaKernelTest, RelativePositionBiasMatchesCpu) {
  const std::vector<int32_t> lengths = {1, 7, 33, 64, 100, 129, 300};
  for (const ops::QkvLayout layout : {ops::QkvLayout{4, 4, 64}, ops::QkvLayout{12, 12, 64}, ops::QkvLayout{4, 2, 32}}) {
    const RaggedBatch batch = MakeRaggedBatch(layout, lengths, rng_);
    const Tensor table = Random({32, layout.num_heads}, rng_);
    const ops::RelativePositionBias host_bias{.table = table};
    const ops::RelativePositionBias device_bias{.table = ToDevice(table, DataType::kF32)};
    const std::vector<std::pair<std::string, ops::AttentionOptions>> cases = {
        {"bidirectional", {}},
        {"scale 0.2", {.scale = 0.2f}},
        {"causal", {.causal = true}},
        {"window 7", {.window = 7}},
        {"causal window 40", {.causal = true, .window = 40}},
    };
    for (const auto& [name, limits] : cases) {
      ops::AttentionOptions options = limits;
      options.position_bias = &host_bias;
      ops::AttentionOptions device_options = limits;
      device_options.position_bias = &device_bias;
      std::ostringstream what;
      what << "relative position bias, heads " << layout.num_heads << "/" << layout.num_kv_heads << " d "
           << layout.head_dim << " " << name;
      ExpectAttentionMatchesCpu(batch, layout, options, device_options, what.str());
    }
  }
}

// DeBERTa's c2p and p2c terms, each alone and both, with log buckets (v3-base's 256 / 512 and
// tiny-deberta-v3's 32 / 512) and without (v2's raw distances, span 48, which the 300-token
// sequence passes, so rows clamp), over one ragged batch of several lengths; head_dim 64 as
// DeBERTa-v3-base and 24 as tiny-deberta-v2. The projections' columns are laid out as
// share_att_key does (query at 0, key after the width plus a gap) and at odd columns (rows not
// bf16-pair aligned).
TEST_F(CudaKernelTest, DisentangledBiasMatchesCpu) {
  const std::vector<int32_t> lengths = {1, 7, 33, 64, 100, 129, 300};
  struct Buckets {
    int32_t span, position_buckets, max_relative_positions;
  };
  for (const ops::QkvLayout layout : {ops::QkvLayout{4, 4, 64}, ops::QkvLayout{3, 3, 24}}) {
    const RaggedBatch batch = MakeRaggedBatch(layout, lengths, rng_);
    const int64_t width = layout.num_heads * layout.head_dim;
    for (const Buckets buckets : {Buckets{256, 256, 512}, Buckets{32, 32, 512}, Buckets{48, 0, 48}}) {
      const Tensor projections = Random({2 * buckets.span, 2 * width + 8}, rng_);
      const Tensor device_projections = ToDevice(projections);
      for (const auto& [query_column, key_column] :
           {std::pair<int64_t, int64_t>{0, width + 8}, {-1, 3}, {5, -1}, {-1, width}, {0, -1}}) {
        // As DeBERTa scales: 1 / sqrt(head_dim · (1 + number of terms)).
        const int terms = int{query_column >= 0} + int{key_column >= 0};
        const float scale = 1.0f / std::sqrt(static_cast<float>(layout.head_dim * (1 + terms)));
        ops::DisentangledPositionBias host_bias{.projections = projections,
                                                .query_column = query_column,
                                                .key_column = key_column,
                                                .span = buckets.span,
                                                .position_buckets = buckets.position_buckets,
                                                .max_relative_positions = buckets.max_relative_positions};
        ops::DisentangledPositionBias device_bias = host_bias;
        device_bias.projections = device_projections;
        for (const auto& [name, limits] : std::vector<std::pair<std::string, ops::AttentionOptions>>{
                 {"bidirectional", {}}, {"causal window 20", {.causal = true, .window = 20}}}) {
          ops::AttentionOptions options = limits;
          options.scale = scale;
          options.disentangled_bias = &host_bias;
          ops::AttentionOptions device_options = options;
          device_options.disentangled_bias = &device_bias;
          std::ostringstream what;
          what << "disentangled bias, d " << layout.head_dim << " span " << buckets.span << " buckets "
               << buckets.position_buckets << "/" << buckets.max_relative_positions << " columns p2c " << query_column
               << " c2p " << key_column << " " << name;
          ExpectAttentionMatchesCpu(batch, layout, options, device_options, what.str());
        }
      }
    }
  }
}

TEST_F(CudaKernelTest, PoolingAndNormalisation) {
  const std::vector<int32_t> bounds_host = {0, 1, 5, 40, 41, 100};
  const Tensor hidden = Random({100, 72}, rng_);
  const Tensor bounds = Ints(bounds_host);
  for (ops::PoolingMode mode : {ops::PoolingMode::kCls, ops::PoolingMode::kMean, ops::PoolingMode::kMax,
                                ops::PoolingMode::kLastToken, ops::PoolingMode::kWeightedMean,
                                ops::PoolingMode::kMeanSqrtLen}) {
    for (int64_t width : {72, 32}) {
      Tensor expected = *Tensor::Allocate(DataType::kF32, {5, width});
      ASSERT_TRUE(ops::Pool(hidden, bounds, mode, expected).ok());
      ASSERT_TRUE(ops::L2Normalize(expected, expected).ok());
      Tensor actual = Empty(DataType::kF32, {5, width}, Device::kCuda);
      ASSERT_TRUE(ops::Pool(ToDevice(hidden), ToDevice(bounds), mode, actual).ok());
      ASSERT_TRUE(ops::L2Normalize(actual, actual).ok());
      EXPECT_CLOSE(expected, ToHost(actual),
                   std::string("pool ") + std::string(ops::PoolingModeName(mode)) + " width " + std::to_string(width));
    }
  }
}

// SPLADE over two slices of logits ([0, 37) and [37, 100), the boundary inside a sequence).
TEST_F(CudaKernelTest, SpladePoolOverSlices) {
  const std::vector<int32_t> bounds_host = {0, 1, 5, 40, 41, 100};
  const Tensor logits = Random({100, 300}, rng_);
  const Tensor bounds = Ints(bounds_host);
  Tensor expected = *Tensor::Allocate(DataType::kF32, {5, 300});
  ASSERT_TRUE(ops::Zero(expected).ok());
  ASSERT_TRUE(ops::SpladePool(logits.Rows(0, 37), bounds, 0, expected).ok());
  ASSERT_TRUE(ops::SpladePool(logits.Rows(37, 100), bounds, 37, expected).ok());
  const Tensor device_logits = ToDevice(logits), device_bounds = ToDevice(bounds);
  Tensor actual = Empty(DataType::kF32, {5, 300}, Device::kCuda);
  ASSERT_TRUE(ops::Zero(actual).ok());
  ASSERT_TRUE(ops::SpladePool(device_logits.Rows(0, 37), device_bounds, 0, actual).ok());
  ASSERT_TRUE(ops::SpladePool(device_logits.Rows(37, 100), device_bounds, 37, actual).ok());
  EXPECT_CLOSE(expected, ToHost(actual), "splade_pool");
}

// ---- whole models ----

// Model folders: the golden tiny models when present, plus STAMEN_CUDA_TEST_MODELS
// (colon-separated folders, e.g. written by `stamen make-model` in bench/gpu/run.sh).
std::vector<std::string> ModelFolders() {
  std::vector<std::string> folders;
  const std::string golden = std::string(STAMEN_SHARED_DIR) + "/models/golden/";
  for (const char* name : {"tiny-bert", "tiny-xlm-roberta", "tiny-xlm-roberta-reranker", "tiny-qwen2"}) {
    if (std::filesystem::exists(golden + name + "/config.json")) folders.push_back(golden + name);
  }
  // This project's goldens (tests/engine/data) of every family the CUDA kernels cover (the CPU
  // engine matches transformers on each in golden_test, so agreeing with it here checks the GPU
  // against transformers too): MPNet's relative position bias and DeBERTa-v2/v3's c2p / p2c
  // (log-bucketed and raw, c2p alone, classifiers) included.
  const std::string local = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/";
  for (const char* name : {"tiny-qwen3", "tiny-distilbert", "tiny-distilbert-classifier", "tiny-roberta-classifier",
                           "tiny-camembert", "tiny-modernbert", "tiny-modernbert-classifier", "tiny-gemma3",
                           "tiny-llama", "tiny-mistral", "tiny-qwen3-classifier", "tiny-qwen3-classifier-3",
                           "tiny-qwen2-classifier", "tiny-qwen3-reranker", "tiny-qwen3-reranker-tied",
                           "tiny-bert-classifier", "tiny-bert-splade", "tiny-roberta-splade", "tiny-mpnet",
                           "tiny-mpnet-classifier", "tiny-mpnet-masked-lm", "tiny-deberta-v3",
                           "tiny-deberta-v3-reranker", "tiny-deberta-v2", "tiny-deberta-v2-c2p-classifier"}) {
    folders.push_back(local + name);
  }
  if (const char* extra = std::getenv("STAMEN_CUDA_TEST_MODELS")) {
    std::stringstream list(extra);
    std::string folder;
    while (std::getline(list, folder, ':')) {
      if (!folder.empty()) folders.push_back(folder);
    }
  }
  return folders;
}

double WorstCosine(const Tensor& expected, const Tensor& actual) {
  EXPECT_EQ(expected.shape(), actual.shape());
  if (!(expected.shape() == actual.shape())) return -1.0;
  double worst = 1.0;
  const int64_t columns = expected.dim(1);
  for (int64_t row = 0; row < expected.dim(0); ++row) {
    double dot = 0.0, ee = 0.0, aa = 0.0;
    for (int64_t c = 0; c < columns; ++c) {
      const double e = expected.data<float>()[row * columns + c];
      const double a = actual.data<float>()[row * columns + c];
      dot += e * a;
      ee += e * e;
      aa += a * a;
    }
    const double cosine = (ee == 0.0 && aa == 0.0) ? 1.0 : dot / std::max(std::sqrt(ee * aa), 1e-30);
    worst = std::min(worst, cosine);
  }
  return worst;
}

Tensor Values(StatusOr<LazyResult>& result) {
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return Tensor();
  Status status = result->Wait();
  EXPECT_TRUE(status.ok()) << status.message();
  return result->values();
}

TEST(CudaModelTest, EveryModelMatchesTheCpuEngine) {
  const std::string why = WhyNoGpu();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::vector<std::string> folders = ModelFolders();
  if (folders.empty()) GTEST_SKIP() << "no model folders (golden models absent and STAMEN_CUDA_TEST_MODELS unset)";
  std::mt19937 rng(7);
  for (const std::string& folder : folders) {
    auto cpu = Engine::Load(folder);
    ASSERT_TRUE(cpu.ok()) << folder << ": " << cpu.status().message();
    auto gpu = Engine::Load(folder, {.device = Device::kCuda});
    ASSERT_TRUE(gpu.ok()) << folder << ": " << gpu.status().message();
    const ModelConfig& config = (*cpu)->config();
    // Uneven lengths, packed: 1, 17, 64, 130 (and one of 300 when the model allows).
    std::vector<int32_t> lengths = {1, 17, 64, 130};
    if (config.max_position_embeddings == 0 || config.max_position_embeddings >= 400) lengths.push_back(300);
    std::vector<int32_t> ids;
    std::vector<int32_t> bounds = {0};
    std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(std::min<int64_t>(config.vocab_size, 30000) - 1));
    for (int32_t length : lengths) {
      for (int32_t t = 0; t < length; ++t) ids.push_back(id(rng));
      bounds.push_back(static_cast<int32_t>(ids.size()));
    }
    const Batch batch{ids, bounds, {}};
    std::vector<std::pair<std::string, StepOptions>> outputs = {
        {"tokens", {.output = StepOutput::kTokenEmbeddings}},
        {"mean", {.pooling = ops::PoolingMode::kMean}},
        {"cls", {.pooling = ops::PoolingMode::kCls, .normalize = false}},
        {"last_token", {.pooling = ops::PoolingMode::kLastToken}},
        {"max", {.pooling = ops::PoolingMode::kMax, .normalize = false}},
        {"weightedmean", {.pooling = ops::PoolingMode::kWeightedMean, .normalize = false}},
        {"mean_sqrt_len_tokens", {.pooling = ops::PoolingMode::kMeanSqrtLen}},
    };
    if (config.head == ModelHead::kMaskedLm) outputs.push_back({"splade", {.pooling = ops::PoolingMode::kSplade}});
    if (config.head == ModelHead::kSequenceClassification) outputs.push_back({"scores", {.output = StepOutput::kScores}});
    for (const auto& [name, options] : outputs) {
      auto expected = (*cpu)->Step(batch, options);
      const Tensor want = Values(expected);
      // Three times: eager, captured, replayed; all must agree with the CPU.
      for (int round = 0; round < 3; ++round) {
        auto actual = (*gpu)->Step(batch, options);
        const Tensor got = Values(actual);
        if (name == "scores") {
          EXPECT_LE(RelativeError(want, got), 2e-2) << folder << " scores round " << round;
          continue;
        }
        const double cosine = WorstCosine(want, got);
        EXPECT_GE(cosine, kCosineFloor) << folder << " " << name << " round " << round;
        std::cout << "[ cuda     ] " << folder << " " << name << " round " << round << ": worst cosine " << cosine
                  << "\n";
      }
    }
    const DeviceStats stats = (*gpu)->device_stats();
    std::cout << "[ cuda     ] " << folder << ": captures " << stats.graph_captures << ", replays "
              << stats.graph_replays << ", eager " << stats.eager_runs << ", capture failures "
              << stats.capture_failures << ", capture seconds " << stats.capture_seconds << "\n";
    EXPECT_GT(stats.graph_captures, 0) << folder;
    EXPECT_GT(stats.graph_replays, 0) << folder;
    EXPECT_EQ(stats.capture_failures, 0) << folder;
  }
}

TEST(CudaModelTest, GraphReplaysAnotherBatchOfTheSameBucketCorrectly) {
  const std::string why = WhyNoGpu();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::vector<std::string> folders = ModelFolders();
  if (folders.empty()) GTEST_SKIP() << "no model folders (golden models absent and STAMEN_CUDA_TEST_MODELS unset)";
  for (const std::string& folder : folders) {
    auto cpu = Engine::Load(folder);
    auto gpu = Engine::Load(folder, {.device = Device::kCuda});
    ASSERT_TRUE(cpu.ok() && gpu.ok()) << folder;
    const int64_t vocab = std::min<int64_t>((*cpu)->config().vocab_size, 1000);
    const StepOptions options{.pooling = ops::PoolingMode::kMean};
    // Same (2 sequences, 64-token bucket), different lengths and ids each time.
    for (int round = 0; round < 5; ++round) {
      const int32_t first = 5 + 7 * round;
      const int32_t second = 40 - 3 * round;
      std::vector<int32_t> ids(first + second);
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 31 + round * 17) % vocab);
      const std::vector<int32_t> bounds = {0, first, first + second};
      auto want = (*cpu)->Step({ids, bounds, {}}, options);
      auto got = (*gpu)->Step({ids, bounds, {}}, options);
      EXPECT_GE(WorstCosine(Values(want), Values(got)), kCosineFloor) << folder << " round " << round;
    }
    const DeviceStats stats = (*gpu)->device_stats();
    EXPECT_EQ(stats.graph_captures, 1) << folder;
    EXPECT_EQ(stats.graph_replays, 3) << folder;
  }
}

TEST(CudaModelTest, BadInputIsRejectedOnTheHost) {
  const std::string why = WhyNoGpu();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::vector<std::string> folders = ModelFolders();
  if (folders.empty()) GTEST_SKIP() << "no model folders";
  auto gpu = Engine::Load(folders.front(), {.device = Device::kCuda});
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  const int32_t vocab = static_cast<int32_t>((*gpu)->config().vocab_size);
  const std::vector<int32_t> ids = {1, vocab, 2};
  const std::vector<int32_t> bounds = {0, 3};
  auto result = (*gpu)->Step({ids, bounds, {}}, {.pooling = ops::PoolingMode::kMean});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("at index 1"), std::string::npos) << result.status().message();
}

#endif  // STAMEN_WITH_CUDA

}  // namespace
}  // namespace stamen::engine
