// What the CUDA graphs rely on, checked on the CPU: workspace views own their buffer; the output
// heads (Classify, SPLADE) run on scratch of their own, so Forward's workspace generation (which
// a captured graph is bound to) is unchanged after a head step with more sequences; and a ragged
// batch padded with trailing empty sequences (the graphs' sequence buckets) gives the same
// positions, attention and hidden states as the unpadded batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/model.h"
#include "engine/ops/attention.h"
#include "engine/ops/embedding.h"
#include "engine/step_output.h"
#include "engine/weight_store.h"
#include "model_folder/model_config.h"

namespace stamen::engine {
namespace {

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

TEST(WorkspaceTest, ViewsOwnTheirBufferAcrossGrowth) {
  Workspace workspace;
  auto small = workspace.Get(0, DataType::kF32, {16});
  ASSERT_TRUE(small.ok());
  EXPECT_NE(small->keep_alive(), nullptr);
  for (int i = 0; i < 16; ++i) small->data<float>()[i] = static_cast<float>(i);
  const uint64_t before = workspace.generation();
  auto grown = workspace.Get(0, DataType::kF32, {1 << 16});
  ASSERT_TRUE(grown.ok());
  EXPECT_GT(workspace.generation(), before);
  EXPECT_NE(grown->raw_data(), small->raw_data());
  // The old view still holds its memory (no use after free; AddressSanitizer would see one).
  for (int i = 0; i < 16; ++i) EXPECT_EQ(small->data<float>()[i], static_cast<float>(i));
  // A view at the same or a smaller size does not reallocate.
  const uint64_t settled = workspace.generation();
  ASSERT_TRUE(workspace.Get(0, DataType::kBF16, {100}).ok());
  EXPECT_EQ(workspace.generation(), settled);
}

struct LoadedModel {
  ModelConfig config;
  std::unique_ptr<Model> model;
};

LoadedModel Load(const std::string& name) {
  LoadedModel loaded;
  auto config = ReadModelConfig(kData + name + "/config.json");
  EXPECT_TRUE(config.ok()) << config.status().message();
  if (!config.ok()) return loaded;
  loaded.config = *config;
  auto weights = WeightStore::OpenDirectory(kData + name);
  EXPECT_TRUE(weights.ok()) << weights.status().message();
  if (!weights.ok()) return loaded;
  auto model = LoadModel(loaded.config, *weights);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (model.ok()) loaded.model = std::move(model.value());
  return loaded;
}

// A CPU batch of `lengths` (ids 5, 6, 7, …) with `empty_tail` empty sequences after them.
struct HostBatch {
  std::vector<int32_t> ids;
  std::vector<int32_t> cu_seqlens;
  Tensor ids_tensor, cu_tensor;
  ModelInput input;
};

void MakeBatch(const std::vector<int32_t>& lengths, int empty_tail, HostBatch& batch) {
  batch.cu_seqlens = {0};
  for (int32_t length : lengths) batch.cu_seqlens.push_back(batch.cu_seqlens.back() + length);
  for (int i = 0; i < empty_tail; ++i) batch.cu_seqlens.push_back(batch.cu_seqlens.back());
  batch.ids.resize(batch.cu_seqlens.back());
  for (size_t i = 0; i < batch.ids.size(); ++i) batch.ids[i] = 5 + static_cast<int32_t>(i % 40);
  const auto tokens = static_cast<int64_t>(batch.ids.size());
  batch.ids_tensor = Tensor::Wrap(batch.ids.data(), DataType::kI32, {tokens});
  batch.cu_tensor = Tensor::Wrap(batch.cu_seqlens.data(), DataType::kI32, {static_cast<int64_t>(batch.cu_seqlens.size())});
  batch.input.token_ids = batch.ids_tensor;
  batch.input.cu_seqlens = batch.cu_tensor;
  batch.input.cu_seqlens_host = batch.cu_seqlens;
}

TEST(WorkspaceTest, ClassifyWithMoreSequencesLeavesForwardWorkspaceUnchanged) {
  for (const std::string name : {"tiny-bert-classifier", "tiny-qwen3-classifier", "tiny-modernbert-classifier"}) {
    SCOPED_TRACE(name);
    LoadedModel loaded = Load(name);
    ASSERT_NE(loaded.model, nullptr);
    Model& model = *loaded.model;
    // A warm-up of 64 tokens in 2 sequences, then 64 tokens in 64 one-token sequences: the head's
    // buffers ([S, hidden] F32 and more) grow, Forward's must not.
    HostBatch few, many;
    MakeBatch({32, 32}, 0, few);
    MakeBatch(std::vector<int32_t>(64, 1), 0, many);
    auto hidden = model.Forward(few.input);
    ASSERT_TRUE(hidden.ok()) << hidden.status().message();
    ASSERT_TRUE(model.Classify(few.input, *hidden).ok());
    const uint64_t generation = model.workspace_generation();
    const uint64_t head_generation = model.head_workspace_generation();
    hidden = model.Forward(many.input);
    ASSERT_TRUE(hidden.ok());
    EXPECT_EQ(model.workspace_generation(), generation);  // same token count: Forward reuses its buffers
    auto logits = model.Classify(many.input, *hidden);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
    EXPECT_EQ(logits->dim(0), 64);
    EXPECT_EQ(model.workspace_generation(), generation) << "the head grew Forward's workspace";
    EXPECT_GT(model.head_workspace_generation(), head_generation);  // the head's scratch grew instead
  }
}

TEST(WorkspaceTest, SpladeHeadLeavesForwardWorkspaceUnchanged) {
  LoadedModel loaded = Load("tiny-bert-splade");
  ASSERT_NE(loaded.model, nullptr);
  Model& model = *loaded.model;
  HostBatch batch;
  MakeBatch({20, 12}, 0, batch);
  auto hidden = model.Forward(batch.input);
  ASSERT_TRUE(hidden.ok()) << hidden.status().message();
  const uint64_t generation = model.workspace_generation();
  auto output = Tensor::Allocate(DataType::kF32, {2, model.splade_width()});
  ASSERT_TRUE(output.ok());
  ASSERT_TRUE(model.SpladeVectors(batch.input, *hidden, *output).ok());
  EXPECT_EQ(model.workspace_generation(), generation) << "the vocabulary-wide logits grew Forward's workspace";
}

double MaxDifference(const Tensor& a, const Tensor& b, int64_t rows) {
  double worst = 0.0;
  const int64_t n = rows * a.dim(1);
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(double{a.data<float>()[i]} - b.data<float>()[i]));
  return worst;
}

TEST(WorkspaceTest, TrailingEmptySequencesChangeNothing) {
  // Positions: the padded batch's are the unpadded one's.
  HostBatch plain, padded;
  MakeBatch({5, 9, 3}, 0, plain);
  MakeBatch({5, 9, 3}, 5, padded);
  auto positions_plain = Tensor::Allocate(DataType::kI32, {17});
  auto positions_padded = Tensor::Allocate(DataType::kI32, {17});
  ASSERT_TRUE(ops::SequencePositions(plain.cu_tensor, 2, *positions_plain).ok());
  ASSERT_TRUE(ops::SequencePositions(padded.cu_tensor, 2, *positions_padded).ok());
  for (int i = 0; i < 17; ++i) EXPECT_EQ(positions_plain->data<int32_t>()[i], positions_padded->data<int32_t>()[i]);

  // Attention, bidirectional and causal, grouped-query heads.
  const ops::QkvLayout layout{.num_heads = 4, .num_kv_heads = 2, .head_dim = 8};
  const int64_t width = (layout.num_heads + 2 * layout.num_kv_heads) * layout.head_dim;
  auto qkv = Tensor::Allocate(DataType::kF32, {17, width});
  ASSERT_TRUE(qkv.ok());
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < qkv->NumElements(); ++i) qkv->data<float>()[i] = normal(rng);
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    auto out_plain = Tensor::Allocate(DataType::kF32, {17, layout.num_heads * layout.head_dim});
    auto out_padded = Tensor::Allocate(DataType::kF32, {17, layout.num_heads * layout.head_dim});
    ASSERT_TRUE(ops::Attention(*qkv, plain.cu_tensor, layout, {.causal = causal}, *out_plain).ok());
    const Status padded_status = ops::Attention(*qkv, padded.cu_tensor, layout, {.causal = causal}, *out_padded);
    ASSERT_TRUE(padded_status.ok()) << padded_status.message();
    EXPECT_EQ(MaxDifference(*out_plain, *out_padded, 17), 0.0);
  }

  // Whole models: hidden states and pooled outputs of the real sequences are the same.
  for (const std::string name :
       {"tiny-bert-classifier", "tiny-qwen3-classifier", "tiny-deberta-v3", "tiny-mpnet", "tiny-modernbert", "tiny-gemma3"}) {
    SCOPED_TRACE(name);
    LoadedModel a = Load(name), b = Load(name);
    ASSERT_NE(a.model, nullptr);
    ASSERT_NE(b.model, nullptr);
    auto hidden_plain = a.model->Forward(plain.input);
    auto hidden_padded = b.model->Forward(padded.input);
    ASSERT_TRUE(hidden_plain.ok()) << hidden_plain.status().message();
    ASSERT_TRUE(hidden_padded.ok()) << hidden_padded.status().message();
    EXPECT_LE(MaxDifference(*hidden_plain, *hidden_padded, 17), 1e-6);
  }
}

}  // namespace
}  // namespace stamen::engine
