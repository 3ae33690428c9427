// bge-m3 (issue 44): the tiny random folder of tools/make_bge_m3_goldens.py (an XLM-R encoder with
// colbert_linear.pt and sparse_linear.pt written by torch.save) against FlagEmbedding 1.4.2's own
// BGEM3FlagModel.encode(return_dense, return_sparse, return_colbert_vecs), all three from one
// kDenseSparseColbert step over one ragged batch of its ids: dense and ColBERT vectors at cosine
// >= 0.9999 and absolute error <= 1e-4, the lexical weights (its ids exactly, each weight within
// 1e-4). Also the dense vector alone through the ordinary embedding step, and the refusals.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model_folder/bge_m3.h"
#include "model_folder/model_config.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

const std::string kFolder = std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-bge-m3";

struct Reference {
  std::vector<std::vector<int32_t>> ids;
  std::vector<int32_t> special_ids;
  std::vector<std::vector<float>> dense;
  std::vector<std::vector<std::pair<int32_t, float>>> sparse;
  std::vector<std::vector<std::vector<float>>> colbert;
};

Reference ReadReference() {
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.load(kFolder + "/reference.json").value();
  Reference reference;
  for (simdjson::dom::element row : root["input_ids"].get_array()) {
    auto& out = reference.ids.emplace_back();
    for (simdjson::dom::element id : row.get_array()) out.push_back(static_cast<int32_t>(int64_t(id)));
  }
  for (simdjson::dom::element id : root["special_ids"].get_array()) reference.special_ids.push_back(int32_t(int64_t(id)));
  for (simdjson::dom::element row : root["dense"].get_array()) {
    auto& out = reference.dense.emplace_back();
    for (simdjson::dom::element value : row.get_array()) out.push_back(static_cast<float>(double(value)));
  }
  for (simdjson::dom::element text : root["sparse"].get_array()) {
    auto& out = reference.sparse.emplace_back();
    for (simdjson::dom::element pair : text.get_array()) {
      out.emplace_back(static_cast<int32_t>(int64_t(pair.at(0))), static_cast<float>(double(pair.at(1))));
    }
  }
  for (simdjson::dom::element text : root["colbert"].get_array()) {
    auto& out = reference.colbert.emplace_back();
    for (simdjson::dom::element row : text.get_array()) {
      auto& vector = out.emplace_back();
      for (simdjson::dom::element value : row.get_array()) vector.push_back(static_cast<float>(double(value)));
    }
  }
  return reference;
}

std::unique_ptr<Engine> LoadTiny() {
  auto engine = Engine::Load(kFolder, {.compute_dtype = DataType::kF32});
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return engine.ok() ? std::move(engine.value()) : nullptr;
}

void ExpectClose(std::span<const float> actual, std::span<const float> expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(double{actual[i]} - expected[i]));
  EXPECT_LE(worst, 1e-4) << what;
  EXPECT_GE(testing::Cosine(actual, expected), 0.9999) << what;
}

TEST(BgeM3Test, ReadsTheFolderAsBgeM3) {
  auto folder = ReadModelFolder(kFolder);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  EXPECT_TRUE(folder->config.bge_m3.enabled);
  EXPECT_EQ(folder->config.family, ModelFamily::kRoberta);
  EXPECT_EQ(folder->sentence_transformers.pooling, ops::PoolingMode::kCls);
}

TEST(BgeM3Test, GivesFlagEmbeddingsThreeOutputsFromOneStep) {
  const Reference reference = ReadReference();
  ASSERT_EQ(reference.ids.size(), 6u);
  auto engine = LoadTiny();
  ASSERT_NE(engine, nullptr);
  std::vector<int32_t> tokens, cu_seqlens = {0};
  for (const auto& ids : reference.ids) {
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    cu_seqlens.push_back(static_cast<int32_t>(tokens.size()));
  }
  auto result = engine->Step({.token_ids = tokens, .cu_seqlens = cu_seqlens, .token_type_ids = {}}, {.output = StepOutput::kDenseSparseColbert});
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_TRUE(result->Wait().ok());
  const BgeM3RowLayout layout{.hidden_size = engine->hidden_size()};
  ASSERT_EQ(result->values().dim(1), layout.columns());
  for (size_t s = 0; s < reference.ids.size(); ++s) {
    const std::string text = "text " + std::to_string(s);
    const Tensor rows = result->SequenceRows(static_cast<int64_t>(s));
    ASSERT_EQ(rows.dim(0), static_cast<int64_t>(reference.ids[s].size())) << text;
    const float* values = rows.data<float>();
    const int64_t columns = layout.columns();
    ExpectClose({values, static_cast<size_t>(layout.hidden_size)}, reference.dense[s], text + " dense");
    // ColBERT: every token after CLS, the final </s> included (FlagEmbedding keeps tokens_num - 1).
    ASSERT_EQ(reference.colbert[s].size() + 1, reference.ids[s].size()) << text;
    for (size_t t = 0; t < reference.colbert[s].size(); ++t) {
      ExpectClose({values + (t + 1) * columns, static_cast<size_t>(layout.hidden_size)}, reference.colbert[s][t],
                  text + " colbert " + std::to_string(t));
    }
    std::vector<float> weights;
    for (int64_t t = 0; t < rows.dim(0); ++t) weights.push_back(values[t * columns + layout.hidden_size]);
    const auto lexical = LexicalWeights(reference.ids[s], weights, reference.special_ids);
    ASSERT_EQ(lexical.size(), reference.sparse[s].size()) << text;
    for (size_t i = 0; i < lexical.size(); ++i) {
      EXPECT_EQ(lexical[i].first, reference.sparse[s][i].first) << text;
      EXPECT_NEAR(lexical[i].second, reference.sparse[s][i].second, 1e-4) << text;
    }
  }
}

TEST(BgeM3Test, GivesTheDenseVectorThroughTheEmbeddingStep) {
  const Reference reference = ReadReference();
  auto engine = LoadTiny();
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->default_pooling(), ops::PoolingMode::kCls);
  for (size_t s = 0; s < reference.ids.size(); ++s) {
    const std::vector<int32_t> cu_seqlens = {0, static_cast<int32_t>(reference.ids[s].size())};
    auto result = engine->Step({.token_ids = reference.ids[s], .cu_seqlens = cu_seqlens, .token_type_ids = {}});
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_TRUE(result->Wait().ok());
    std::vector<float> row(result->Row(0).begin(), result->Row(0).end());
    double norm = 0.0;
    for (float x : row) norm += double{x} * x;
    for (float& x : row) x = static_cast<float>(x / std::sqrt(norm));
    ExpectClose(row, reference.dense[s], "text " + std::to_string(s));
  }
}

TEST(BgeM3Test, RefusesTheOutputsOnOtherModelsAndHalfAFolder) {
  auto other = Engine::Load(std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-camembert");
  ASSERT_TRUE(other.ok()) << other.status().message();
  const std::vector<int32_t> ids = {5, 10, 6}, cu_seqlens = {0, 3};
  auto refused = (*other)->Step({.token_ids = ids, .cu_seqlens = cu_seqlens, .token_type_ids = {}}, {.output = StepOutput::kDenseSparseColbert});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("come from a bge-m3 folder"), std::string::npos) << refused.status().message();

  // The encoder with only one of its two heads.
  testing::TempDir dir;
  for (const char* name : {"config.json", "model.safetensors", "colbert_linear.pt"}) {
    std::filesystem::copy_file(kFolder + "/" + name, dir.File(name));
  }
  auto half = ReadModelFolder(dir.path());
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("needs both colbert_linear.pt and sparse_linear.pt"), std::string::npos)
      << half.status().message();
  // A sparse head of the wrong width is named with its file, and so is a ColBERT head narrower than
  // the hidden size (here: the [1, 32] sparse head in its place).
  std::filesystem::copy_file(kFolder + "/colbert_linear.pt", dir.File("sparse_linear.pt"));
  auto wrong = Engine::Load(dir.path());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("sparse_linear.pt: tensor 'weight' has shape [32, 32], expected [1, 32]"),
            std::string::npos)
      << wrong.status().message();
  std::filesystem::copy_file(kFolder + "/sparse_linear.pt", dir.File("colbert_linear.pt"),
                             std::filesystem::copy_options::overwrite_existing);
  auto narrow = Engine::Load(dir.path());
  ASSERT_FALSE(narrow.ok());
  EXPECT_NE(narrow.status().message().find("colbert_linear.pt: weight has shape [1, 32], expected [32, 32]"),
            std::string::npos)
      << narrow.status().message();
}

}  // namespace
}  // namespace stamen::engine
