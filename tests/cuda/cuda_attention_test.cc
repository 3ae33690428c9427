// The CUDA attention kernels (tensor cores and scalar) against the CPU op on the same random
// ragged batches: plain, grouped-query, causal and windowed attention, MPNet's relative position
// bias, DeBERTa's c2p / p2c terms, JinaBERT's ALiBi (relative error ≤ 1e-2, cuda_test_support.h).
// Without a GPU every test reports SKIPPED.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cuda_test_support.h"
#include "engine/cuda/kernels.h"
#include "engine/ops/attention.h"

namespace stamen::engine::cuda_test {
namespace {

#if STAMEN_WITH_CUDA

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

// The tensor-core kernel (every head size it has) against the CPU op and against the scalar
// kernel on the same batches: scale, causal, windows, grouped heads, lengths around its 64-row
// query tiles and 64- (32-) key tiles, and trailing empty sequences (a graph's sequence bucket).
// ops::Attention takes the tensor cores here (sm_80+), so the test first checks that it does.
TEST_F(CudaKernelTest, TensorCoreAttentionMatchesCpuAndScalarKernel) {
  const std::vector<int32_t> lengths = {1, 15, 16, 17, 63, 64, 65, 200, 0, 0, 0};
  const std::vector<std::pair<std::string, ops::AttentionOptions>> cases = {
      {"bidirectional", {}},
      {"scale 0.2", {.scale = 0.2f}},
      {"causal", {.causal = true}},
      {"window 7", {.window = 7}},
      {"causal window 40", {.causal = true, .window = 40}},
  };
  for (const ops::QkvLayout layout : {ops::QkvLayout{4, 2, 32}, ops::QkvLayout{4, 4, 64}, ops::QkvLayout{16, 8, 128},
                                      ops::QkvLayout{4, 1, 256}}) {
    const RaggedBatch batch = MakeRaggedBatch(layout, lengths, rng_);
    const Tensor qkv = ToDevice(batch.qkv);
    const Tensor cu_seqlens = ToDevice(batch.cu_seqlens);
    ASSERT_TRUE(cuda::TensorCoreAttentionFits(qkv, layout, {})) << "head_dim " << layout.head_dim;
    const int64_t width = layout.num_heads * layout.head_dim;
    for (const auto& [name, options] : cases) {
      std::ostringstream what;
      what << "tensor cores, heads " << layout.num_heads << "/" << layout.num_kv_heads << " d " << layout.head_dim
           << " " << name;
      ExpectAttentionMatchesCpu(batch, layout, options, options, what.str());
      Tensor tensor_cores = Empty(DataType::kBF16, {batch.tokens, width}, Device::kCuda);
      Tensor scalar = Empty(DataType::kBF16, {batch.tokens, width}, Device::kCuda);
      ASSERT_TRUE(cuda::TensorCoreAttention(qkv, cu_seqlens, layout, options, tensor_cores).ok()) << what.str();
      ASSERT_TRUE(cuda::ScalarAttention(qkv, cu_seqlens, layout, options, scalar).ok()) << what.str();
      EXPECT_CLOSE(ToHost(scalar), ToHost(tensor_cores), what.str() + " vs the scalar kernel");
    }
  }
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

// JinaBERT's ALiBi (−slope_h · |i − j|, ops::AlibiSlopes) on the kernel the op chooses and on the
// scalar kernel, with jina-embeddings-v2-base's 12 heads and -small's 8, over sequences up to 300
// tokens (slopes of 0.5 reach scores e^−150 below the row's largest) and several 32-query /
// 64-key tiles; with the causal and window limits too.
TEST_F(CudaKernelTest, AlibiMatchesCpu) {
  const std::vector<int32_t> lengths = {1, 7, 33, 64, 100, 129, 300};
  for (const ops::QkvLayout layout : {ops::QkvLayout{12, 12, 64}, ops::QkvLayout{8, 8, 64}, ops::QkvLayout{6, 6, 32}}) {
    const RaggedBatch batch = MakeRaggedBatch(layout, lengths, rng_);
    const std::vector<float> slopes = ops::AlibiSlopes(layout.num_heads);
    Tensor table = *Tensor::Allocate(DataType::kF32, {layout.num_heads});
    std::copy(slopes.begin(), slopes.end(), table.data<float>());
    const ops::AlibiBias host_alibi{.slopes = table};
    const ops::AlibiBias device_alibi{.slopes = ToDevice(table, DataType::kF32)};
    const std::vector<std::pair<std::string, ops::AttentionOptions>> cases = {
        {"bidirectional", {}}, {"causal", {.causal = true}}, {"window 20", {.window = 20}}};
    for (const auto& [name, limits] : cases) {
      ops::AttentionOptions options = limits;
      options.alibi = &host_alibi;
      ops::AttentionOptions device_options = limits;
      device_options.alibi = &device_alibi;
      std::ostringstream what;
      what << "alibi, heads " << layout.num_heads << " d " << layout.head_dim << " " << name;
      ExpectAttentionMatchesCpu(batch, layout, options, device_options, what.str());
      // The scalar kernel (the fallback) too, whichever kernel the op chose above.
      Tensor cpu = *Tensor::Allocate(DataType::kF32, {batch.tokens, layout.num_heads * layout.head_dim});
      ASSERT_TRUE(ops::Attention(batch.qkv, batch.cu_seqlens, layout, options, cpu).ok()) << what.str();
      Tensor scalar = Empty(DataType::kBF16, {batch.tokens, layout.num_heads * layout.head_dim}, Device::kCuda);
      ASSERT_TRUE(cuda::ScalarAttention(ToDevice(batch.qkv), ToDevice(batch.cu_seqlens), layout, device_options,
                                        scalar).ok())
          << what.str();
      EXPECT_CLOSE(cpu, ToHost(scalar), what.str() + ", scalar kernel");
    }
  }
}

#endif  // STAMEN_WITH_CUDA

}  // namespace
}  // namespace stamen::engine::cuda_test
