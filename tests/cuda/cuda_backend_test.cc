// The CUDA backend against the CPU backend. Kernel tests feed both backends the same random
// inputs (rounded to bf16 first, so only the arithmetic differs) and require a relative error
// ‖gpu − cpu‖ / ‖cpu‖ ≤ 1e-2. Model tests load each model on both devices and require a
// cosine similarity ≥ 0.999 per output vector, then check the CUDA graph path (eager, capture,
// replay) gives the same values. Without a GPU (or a build without the backend) every test
// that needs one reports SKIPPED with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/models/mixture_of_experts.h"
#include "engine/models/model.h"
#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/convert.h"
#include "engine/ops/embedding.h"
#include "engine/ops/experts.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/pooling.h"
#include "engine/ops/rope.h"

#if STAMEN_WITH_CUDA
#include "engine/cuda/context.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/runtime.h"
#endif
#include "cuda_test_support.h"

namespace stamen::engine::cuda_test {
namespace {

constexpr double kCosineFloor = 0.999;

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

// ---- sticky faults (no GPU needed) ----

TEST(CudaFaultTest, StickyErrorsAreTheOnesThatPoisonTheContext) {
  EXPECT_TRUE(cuda::IsStickyError(cudaErrorIllegalAddress));
  EXPECT_TRUE(cuda::IsStickyError(cudaErrorLaunchFailure));
  EXPECT_TRUE(cuda::IsStickyError(cudaErrorIllegalInstruction));
  EXPECT_TRUE(cuda::IsStickyError(cudaErrorMisalignedAddress));
  EXPECT_FALSE(cuda::IsStickyError(cudaErrorMemoryAllocation));
  EXPECT_FALSE(cuda::IsStickyError(cudaErrorNoDevice));
  EXPECT_FALSE(cuda::IsStickyError(cudaErrorInvalidValue));
  EXPECT_FALSE(cuda::IsStickyError(cudaErrorNotReady));
}

// In a forked child (a death test), so the parent process stays clean: CheckCuda remembers the
// first sticky error, and StickyFault (what Engine::health and every later Step report) says so.
TEST(CudaFaultTest, CheckCudaRemembersAStickyFault) {
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
  EXPECT_EXIT(
      {
        if (!cuda::StickyFault().ok()) std::_Exit(2);
        (void)cuda::CheckCuda(cudaErrorMemoryAllocation, "an allocation");
        if (!cuda::StickyFault().ok()) std::_Exit(3);  // out of memory is not sticky
        (void)cuda::CheckCuda(cudaErrorIllegalAddress, "a kernel");
        const Status fault = cuda::StickyFault();
        if (fault.ok()) std::_Exit(4);
        if (fault.message().find("cudaErrorIllegalAddress") == std::string::npos) std::_Exit(5);
        if (fault.message().find("restarted") == std::string::npos) std::_Exit(6);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// ---- kernels (the attention's are in cuda_attention_test.cc) ----

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

// JinaBERT qk-post-norm: the LayerNorm kernel over each token's query and key blocks of the
// packed qkv (rows a qkv row apart), in place.
TEST_F(CudaKernelTest, LayerNormOfWholeQueryAndKey) {
  const ops::QkvLayout layout{12, 12, 64};
  Tensor qkv = Random({29, layout.row_size()}, rng_, 2.0f);
  const Tensor q_gamma = Random({768}, rng_), q_beta = Random({768}, rng_);
  const Tensor k_gamma = Random({768}, rng_), k_beta = Random({768}, rng_);
  Tensor device = ToDevice(qkv);
  ASSERT_TRUE(ops::LayerNormQueryKey(device, layout, ToDevice(q_gamma), ToDevice(q_beta), ToDevice(k_gamma),
                                     ToDevice(k_beta), 1e-12f)
                  .ok());
  ASSERT_TRUE(ops::LayerNormQueryKey(qkv, layout, q_gamma, q_beta, k_gamma, k_beta, 1e-12f).ok());
  EXPECT_CLOSE(qkv, ToHost(device), "layer_norm_query_key");
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

// Llama 3's, GTE's NTK and NomicBERT's dynamic NTK rescaled frequencies (llama-nemotron-embed,
// gte-*-v1.5 / gte-multilingual, nomic-embed-text with rotary_scaling_factor), partial rotary,
// and pplx-embed's int8 vectors: the same
// numbers on the GPU as on the CPU (the CPU's are checked against transformers by the goldens).
TEST_F(CudaKernelTest, ScaledRopeAndTanhRound) {
  const Tensor positions = Ints({0, 1, 2, 3, 100, 8191, 8192, 20000});
  const int64_t d = 64;
  const ops::RopeScaling llama3{.factor = 32.0f, .low_freq_factor = 1.0f, .high_freq_factor = 4.0f,
                                .original_max_position_embeddings = 8192.0f};
  Tensor expected_table = *Tensor::Allocate(DataType::kF32, {8, d});
  ASSERT_TRUE(ops::RopeTable(positions, 500000.0, expected_table, llama3).ok());
  Tensor table = Empty(DataType::kF32, {8, d}, Device::kCuda);
  ASSERT_TRUE(ops::RopeTable(ToDevice(positions), 500000.0, table, llama3).ok());
  EXPECT_CLOSE(expected_table, ToHost(table), "rope_table llama3");
  // GTE's fixed NTK scaling (gte-multilingual-base: factor 8, base 160000).
  const ops::RopeScaling ntk{.factor = 8.0f, .type = ops::RopeScalingType::kNtk};
  ASSERT_TRUE(ops::RopeTable(positions, 160000.0, expected_table, ntk).ok());
  ASSERT_TRUE(ops::RopeTable(ToDevice(positions), 160000.0, table, ntk).ok());
  EXPECT_CLOSE(expected_table, ToHost(table), "rope_table ntk");
  // NomicBERT's dynamic NTK (factor 2, trained length 3): each token's sequence, found on the
  // device from the boundaries (a trailing empty sequence, as a graph bucket has), picks its base.
  const ops::RopeScaling dynamic{.factor = 2.0f, .original_max_position_embeddings = 3.0f,
                                 .type = ops::RopeScalingType::kDynamicNtk};
  const Tensor bounds = Ints({0, 2, 8, 8});
  ASSERT_TRUE(ops::RopeTable(positions, 1000.0, expected_table, dynamic, bounds).ok());
  ASSERT_TRUE(ops::RopeTable(ToDevice(positions), 1000.0, table, dynamic, ToDevice(bounds)).ok());
  EXPECT_CLOSE(expected_table, ToHost(table), "rope_table dynamic ntk");
  // Partial rotary: a table of 32 of the 64 dimensions turns the first half of each head only.
  Tensor narrow_expected = *Tensor::Allocate(DataType::kF32, {8, 32});
  ASSERT_TRUE(ops::RopeTable(positions, 10000.0, narrow_expected).ok());
  Tensor narrow = Empty(DataType::kF32, {8, 32}, Device::kCuda);
  ASSERT_TRUE(ops::RopeTable(ToDevice(positions), 10000.0, narrow).ok());
  const ops::QkvLayout layout{2, 2, d};
  Tensor qkv = Random({8, layout.row_size()}, rng_);
  Tensor qkv_device = ToDevice(qkv);
  ASSERT_TRUE(ops::ApplyRope(qkv_device, layout, narrow).ok());
  ASSERT_TRUE(ops::ApplyRope(qkv, layout, narrow_expected).ok());
  EXPECT_CLOSE(qkv, ToHost(qkv_device), "apply_rope partial");
  Tensor values = Random({3, 70}, rng_);
  for (int64_t i = 0; i < values.NumElements(); ++i) values.data<float>()[i] *= 3.0f;
  Tensor device = ToDevice(values, DataType::kF32);  // pooled vectors are F32 on every device
  ASSERT_TRUE(ops::ScaledTanhRound(values, 127.0f).ok());
  ASSERT_TRUE(ops::ScaledTanhRound(device, 127.0f).ok());
  EXPECT_CLOSE(values, ToHost(device), "scaled_tanh_round");
}

TEST_F(CudaKernelTest, EmbeddingsAndPositions) {
  const Tensor table = Random({50, 96}, rng_);
  const Tensor extra = Random({3, 96}, rng_);
  const Tensor ids = Ints({0, 49, 7, 7, 12, 3});
  const Tensor types = Ints({0, 1, 2, 0, 1, 2});
  Tensor expected = *Tensor::Allocate(DataType::kF32, {6, 96});
  ASSERT_TRUE(ops::Gather(table, ids, expected, /*accumulate=*/false, /*scale=*/0.5f).ok());
  ASSERT_TRUE(ops::Gather(extra, types, expected, true).ok());
  Tensor actual = Empty(DataType::kBF16, {6, 96}, Device::kCuda);
  ASSERT_TRUE(ops::Gather(ToDevice(table), ToDevice(ids), actual, /*accumulate=*/false, /*scale=*/0.5f).ok());
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

// nomic-embed-text-v2-moe's mixture of experts (issue 48): the router's fp32 logits from bf16
// hidden states, the weighted combine, and the whole layer against the CPU layer on the same
// bf16-exact inputs. Both backends' logits are fp32 products of the same values, so they route
// alike (a flip needs two probabilities within ~1e-6; the router's scale makes them far apart).
TEST_F(CudaKernelTest, MixtureOfExpertsMatchesTheCpuLayer) {
  const int64_t tokens = 70, hidden = 96, experts = 8, width = 128;
  const Tensor input = Random({tokens, hidden}, rng_);
  layers::MixtureOfExpertsWeights host{.router_weight = Random({experts, hidden}, rng_, 0.5f),
                                       .up_weight = Random({experts * width, hidden}, rng_, 0.1f),
                                       .down_weight = Random({experts * hidden, width}, rng_, 0.1f),
                                       .output_bias = Random({hidden}, rng_, 0.1f)};
  const layers::MixtureOfExpertsWeights device{.router_weight = ToDevice(host.router_weight, DataType::kF32),
                                               .up_weight = ToDevice(host.up_weight),
                                               .down_weight = ToDevice(host.down_weight),
                                               .output_bias = ToDevice(host.output_bias)};
  const layers::MixtureOfExpertsSettings settings{
      .activation = ops::Activation::kGeluErf, .num_experts = experts, .top_k = 2, .intermediate_size = width};

  Tensor expected_logits = *Tensor::Allocate(DataType::kF32, {tokens, experts});
  ASSERT_TRUE(ops::ExpertLogits(input, host.router_weight, expected_logits).ok());
  Tensor logits = Empty(DataType::kF32, {tokens, experts}, Device::kCuda);
  ASSERT_TRUE(ops::ExpertLogits(ToDevice(input), device.router_weight, logits).ok());
  EXPECT_CLOSE(expected_logits, ToHost(logits), "expert_logits");

  Workspace host_workspace(Device::kCpu), device_workspace(Device::kCuda);
  Tensor expected = *Tensor::Allocate(DataType::kF32, {tokens, hidden});
  ASSERT_TRUE(layers::MixtureOfExperts(host, settings, input, layers::Slots(host_workspace), expected).ok());
  Tensor actual = Empty(DataType::kBF16, {tokens, hidden}, Device::kCuda);
  const Status ran = layers::MixtureOfExperts(device, settings, ToDevice(input), layers::Slots(device_workspace), actual);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_CLOSE(expected, ToHost(actual), "mixture_of_experts");
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
                           "tiny-deberta-v3-reranker", "tiny-deberta-v2", "tiny-deberta-v2-c2p-classifier",
                           // Issue 44: yes/no LLM rerankers on Qwen2 (mxbai) and Gemma (logit("Yes") alone).
                           "tiny-qwen2-mxbai-reranker", "tiny-gemma-reranker",
                           // Gemma 2: soft-capped attention in both kernels, and soft-capped logits.
                           "tiny-gemma2-reranker",
                           // bge-reranker-v2.5-gemma2-lightweight's CostWiseGemma: the layers to its cut-off, one head.
                           "tiny-gemma2-costwise-reranker",
                           // Issue 48: JinaBERT's ALiBi (slopes F32 on the device), an embedder and a reranker.
                           "tiny-jina-bert", "tiny-jina-reranker-bf16", "tiny-jina-bert-code",
                           // Issue 48's other families, never yet run on a GPU: bidirectional Llama / Qwen3
                           // encoders (EuroBERT and its late- and mean-pooled heads, pplx-embed's int8
                           // vectors, llama-nemotron-embed / -rerank, voyage-4-nano's projection as a Dense
                           // module), the rotary post-norm encoders (NomicBERT with partial rotary and
                           // dynamic NTK, GTE with NTK and its reranker, stella's Dense) and jina-embeddings-v3's
                           // base weights (its adapters: TaskAdaptersMatchTheCpuEngine). NomicBERT's experts:
                           // MixtureOfExpertsMatchesTheCpuLayer, ExpertModelsRunEagerly.
                           "tiny-eurobert", "tiny-eurobert-reranker-late", "tiny-eurobert-classifier-mean",
                           "tiny-pplx-embed", "tiny-llama-bidirectional", "tiny-llama-bidirectional-reranker",
                           "tiny-voyage-qwen3-bidirectional", "tiny-nomic-bert", "tiny-nomic-bert-partial-rotary-hub",
                           "tiny-nomic-bert-dynamic-ntk", "tiny-gte", "tiny-gte-hub-ntk-f16", "tiny-gte-reranker-hub",
                           "tiny-gte-stella-dense", "tiny-jina-v3"}) {
    // A bundle may carry only some of them (bench/gpu/pack.sh): absent ones are left out, not failed.
    if (std::filesystem::exists(local + name + "/config.json")) folders.push_back(local + name);
  }
  // Static embeddings (issue 44): the gather and mean kernels on a table, model2vec's folder
  // (config.json) and a StaticEmbedding one (modules.json, no config.json).
  for (const char* name : {"tiny-model2vec", "tiny-model2vec-quantized", "tiny-static-embedding"}) {
    if (std::filesystem::exists(local + name + "/modules.json") || std::filesystem::exists(local + name + "/config.json")) {
      folders.push_back(local + name);
    }
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
        {"cls", {.pooling = ops::PoolingMode::kCls}},
        {"last_token", {.pooling = ops::PoolingMode::kLastToken}},
        {"max", {.pooling = ops::PoolingMode::kMax}},
        {"weightedmean", {.pooling = ops::PoolingMode::kWeightedMean}},
        {"mean_sqrt_len_tokens", {.pooling = ops::PoolingMode::kMeanSqrtLen}},
    };
    if (config.head == ModelHead::kMaskedLm) outputs.push_back({"splade", {.pooling = ops::PoolingMode::kSplade}});
    if (config.head == ModelHead::kSequenceClassification) outputs.push_back({"scores", {.output = StepOutput::kScores}});
    for (const auto& [name, options] : outputs) {
      auto expected = (*cpu)->Step(batch, options);
      const Tensor want = Values(expected);
      // Four times: eager, eager and timed (the inflection's measurement), captured, replayed;
      // all must agree with the CPU.
      for (int round = 0; round < 4; ++round) {
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

// jina-embeddings-v3's task adapters on the device (issue 48): a batch mixing no task and three
// tasks, sequences of one task side by side and apart, agrees with the CPU engine's per-sequence
// adapters; such steps run eagerly, never from a graph, even when their bucket has one.
TEST(CudaModelTest, TaskAdaptersMatchTheCpuEngine) {
  const std::string why = WhyNoGpu();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-jina-v3-hub-bf16";
  if (!std::filesystem::exists(folder + "/config.json")) GTEST_SKIP() << "tiny-jina-v3-hub-bf16 is not carried";
  auto cpu = Engine::Load(folder);
  auto gpu = Engine::Load(folder, {.device = Device::kCuda});
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  ASSERT_GE((*cpu)->config().adapter_tasks.size(), 4u);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(std::min<int64_t>((*cpu)->config().vocab_size, 1000) - 1));
  const std::vector<int32_t> lengths = {5, 17, 9, 64, 3, 40};
  const std::vector<int32_t> adapters = {-1, 0, 3, 3, 1, 0};
  std::vector<int32_t> ids, bounds = {0};
  for (int32_t length : lengths) {
    for (int32_t t = 0; t < length; ++t) ids.push_back(id(rng));
    bounds.push_back(static_cast<int32_t>(ids.size()));
  }
  const Batch batch{.token_ids = ids, .cu_seqlens = bounds, .adapters = adapters};
  for (const auto& [name, options] : std::vector<std::pair<std::string, StepOptions>>{
           {"tokens", {.output = StepOutput::kTokenEmbeddings}}, {"mean", {.pooling = ops::PoolingMode::kMean}}}) {
    auto expected = (*cpu)->Step(batch, options);
    const Tensor want = Values(expected);
    for (int round = 0; round < 4; ++round) {  // past the sightings after which a bucket is captured
      auto actual = (*gpu)->Step(batch, options);
      const double cosine = WorstCosine(want, Values(actual));
      EXPECT_GE(cosine, kCosineFloor) << name << " round " << round;
      std::cout << "[ cuda     ] task adapters " << name << " round " << round << ": worst cosine " << cosine << "\n";
    }
  }
  EXPECT_EQ((*gpu)->device_stats().graph_captures, 0) << "a step naming task adapters was captured";
}

// A mixture-of-experts model (tiny-nomic-bert-moe-hub) routes on the host, so every step runs
// eagerly, never captured (Model::Graphable), and repeats exactly. Against the CPU engine in
// fp32 most tokens agree; a token whose 2nd and 3rd router probabilities are within bf16's
// rounding of the layers before may go to another expert (this random model has such near ties,
// see BFloat16GoldenTest), so the median token is held to the floor, not the worst.
TEST(CudaModelTest, ExpertModelsRunEagerly) {
  const std::string why = WhyNoGpu();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-nomic-bert-moe-hub";
  if (!std::filesystem::exists(folder + "/config.json")) GTEST_SKIP() << "tiny-nomic-bert-moe-hub is not carried";
  auto cpu = Engine::Load(folder);
  auto gpu = Engine::Load(folder, {.device = Device::kCuda});
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  const int64_t vocab = std::min<int64_t>((*cpu)->config().vocab_size, 1000);
  std::vector<int32_t> ids(5 + 17 + 40);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + 11) % vocab);
  const std::vector<int32_t> bounds = {0, 5, 22, 62};
  const Batch batch{ids, bounds, {}};
  const StepOptions options{.output = StepOutput::kTokenEmbeddings};
  auto expected = (*cpu)->Step(batch, options);
  const Tensor want = Values(expected);
  Tensor first;
  for (int round = 0; round < 4; ++round) {  // past the sightings after which a bucket is captured
    auto actual = (*gpu)->Step(batch, options);
    const Tensor got = Values(actual);
    ASSERT_EQ(got.shape(), want.shape());
    if (round == 0) {
      first = *Tensor::Allocate(DataType::kF32, got.shape());  // the result's buffer is the runner's
      ASSERT_TRUE(CopyTensor(got, first).ok());
      std::vector<double> cosines;
      for (int64_t t = 0; t < got.dim(0); ++t) cosines.push_back(WorstCosine(want.Rows(t, t + 1), got.Rows(t, t + 1)));
      std::sort(cosines.begin(), cosines.end());
      EXPECT_GE(cosines[cosines.size() / 2], kCosineFloor) << "median token";
      std::cout << "[ cuda     ] tiny-nomic-bert-moe-hub tokens: worst cosine " << cosines.front() << ", median "
                << cosines[cosines.size() / 2] << "\n";
      continue;
    }
    EXPECT_EQ(std::memcmp(first.raw_data(), got.raw_data(), got.NumBytes()), 0) << "round " << round;
  }
  const DeviceStats stats = (*gpu)->device_stats();
  EXPECT_EQ(stats.graph_captures, 0);
  EXPECT_GE(stats.eager_runs, 4);
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
    // Same (2 sequences, 64-token bucket), different lengths and ids each time: eager, eager
    // (timed), captured, then two replays.
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
    EXPECT_EQ(stats.graph_replays, 2) << folder;
  }
}

TEST(CudaModelTest, SequenceCountsShareABucketsGraph) {
  const std::string why = WhyNoGpu();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::vector<std::string> folders = ModelFolders();
  if (folders.empty()) GTEST_SKIP() << "no model folders";
  for (const std::string& folder : folders) {
    auto cpu = Engine::Load(folder);
    auto gpu = Engine::Load(folder, {.device = Device::kCuda});
    ASSERT_TRUE(cpu.ok() && gpu.ok()) << folder;
    const int64_t vocab = std::min<int64_t>((*cpu)->config().vocab_size, 1000);
    const StepOptions options{.pooling = ops::PoolingMode::kMean};
    // 5, 6, 7 and 8 sequences of 40 tokens in all: one (8-sequence, 64-token) configuration,
    // padded with empty sequences; each result only has the real sequences, as on the CPU.
    for (int round = 0; round < 6; ++round) {
      const int sequences = 5 + round % 4;
      std::vector<int32_t> bounds = {0};
      for (int s = 0; s < sequences; ++s) bounds.push_back(40 * (s + 1) / sequences);
      std::vector<int32_t> ids(40);
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 13 + round * 5) % vocab);
      auto want = (*cpu)->Step({ids, bounds, {}}, options);
      auto got = (*gpu)->Step({ids, bounds, {}}, options);
      const Tensor got_values = Values(got);
      EXPECT_EQ(got_values.dim(0), sequences) << folder;
      EXPECT_GE(WorstCosine(Values(want), got_values), kCosineFloor) << folder << " round " << round;
    }
    const DeviceStats stats = (*gpu)->device_stats();
    EXPECT_EQ(stats.graph_captures, 1) << folder;
    EXPECT_EQ(stats.graph_replays, 3) << folder;
  }
}

TEST(CudaModelTest, AResultDroppedBeforeWaitDoesNotCorruptTheNext) {
  const std::string why = WhyNoGpu();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::vector<std::string> folders = ModelFolders();
  if (folders.empty()) GTEST_SKIP() << "no model folders";
  auto cpu = Engine::Load(folders.front());
  auto gpu = Engine::Load(folders.front(), {.device = Device::kCuda});
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  const int64_t vocab = std::min<int64_t>((*cpu)->config().vocab_size, 1000);
  std::vector<int32_t> ids(200);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7) % vocab);
  const std::vector<int32_t> bounds = {0, 60, 200};
  const StepOptions options{.output = StepOutput::kTokenEmbeddings};
  auto want = (*cpu)->Step({ids, bounds, {}}, options);
  const Tensor expected = Values(want);
  for (int round = 0; round < 8; ++round) {
    // Dropped at once: its pinned block goes back to the pool with the copy still pending,
    // and the next step's staging or result must wait for that copy before reusing it.
    { auto dropped = (*gpu)->Step({ids, bounds, {}}, options); }
    auto kept = (*gpu)->Step({ids, bounds, {}}, options);
    EXPECT_GE(WorstCosine(expected, Values(kept)), kCosineFloor) << "round " << round;
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
}  // namespace stamen::engine::cuda_test
