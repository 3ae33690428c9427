// Static embedding models (issue 44): model2vec folders and sentence-transformers StaticEmbedding
// folders against their own libraries' vectors (tools/make_static_goldens.py wrote them with
// model2vec's StaticModel.encode and SentenceTransformer.encode): the ids the tokenizer gives
// (no special tokens; model2vec's character cut, token cut and unknown-token drop), and the mean
// of the rows, raw and normalised, at cosine >= 0.9999 and absolute error <= 1e-4 in fp32,
// including texts with unknown tokens, texts with no known token (the zero vector) and texts
// longer than model2vec's max_length.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/finish_rows.h"
#include "model_folder/model_config.h"
#include "model_folder/model_tokenizer.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

struct Reference {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<float>> raw, normalized;
};

Reference ReadReference(const std::string& folder) {
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.load(folder + "/reference.json");
  Reference reference;
  for (simdjson::dom::element text : root["texts"].get_array()) reference.texts.emplace_back(std::string_view(text));
  for (simdjson::dom::element row : root["ids"].get_array()) {
    std::vector<int32_t>& ids = reference.ids.emplace_back();
    for (simdjson::dom::element id : row.get_array()) ids.push_back(static_cast<int32_t>(int64_t(id)));
  }
  for (auto [key, target] : {std::pair{"raw", &reference.raw}, std::pair{"normalized", &reference.normalized}}) {
    for (simdjson::dom::element row : root[key].get_array()) {
      std::vector<float>& values = target->emplace_back();
      for (simdjson::dom::element value : row.get_array()) values.push_back(static_cast<float>(double(value)));
    }
  }
  return reference;
}

double Norm(std::span<const float> values) {
  double sum = 0;
  for (float value : values) sum += double{value} * value;
  return std::sqrt(sum);
}

void ExpectClose(const std::vector<float>& expected, std::span<const float> actual, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0, dot = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, std::abs(double{actual[i]} - expected[i]));
    dot += double{actual[i]} * expected[i];
  }
  EXPECT_LE(worst, 1e-4) << what;
  const double norms = Norm(expected) * Norm(actual);
  if (Norm(expected) < 1e-6) {
    EXPECT_LT(Norm(actual), 1e-6) << what << ": the reference is the zero vector";
  } else {
    EXPECT_GE(dot / norms, 0.9999) << what;
  }
}

// Tokenizes every reference text as the server does, runs them as one batch raw and
// normalised, and compares ids and vectors with the library's.
void CheckAgainstReference(const std::string& folder, const std::string& reference_folder) {
  const Reference reference = ReadReference(reference_folder);
  ASSERT_FALSE(reference.texts.empty());
  auto engine = Engine::Load(folder, {.num_threads = 1, .compute_dtype = DataType::kF32});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const ModelConfig& config = (*engine)->config();
  EXPECT_EQ(config.family, ModelFamily::kStaticEmbedding);
  EXPECT_EQ((*engine)->default_pooling(), ops::PoolingMode::kMean);
  auto tokenizer = ModelTokenizer::Load(folder, config);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();

  std::vector<int32_t> all_ids, cu_seqlens = {0}, ids;
  for (size_t i = 0; i < reference.texts.size(); ++i) {
    (*tokenizer)->Encode(reference.texts[i], 0, &ids);
    // A text with no token left is the empty bag alone (the table's zero row).
    const std::vector<int32_t> expected =
        reference.ids[i].empty() ? std::vector<int32_t>{static_cast<int32_t>(config.static_embedding.empty_bag_id())}
                                 : reference.ids[i];
    EXPECT_EQ(ids, expected) << folder << ": text " << i;
    all_ids.insert(all_ids.end(), ids.begin(), ids.end());
    cu_seqlens.push_back(static_cast<int32_t>(all_ids.size()));
  }
  // The rows Forward gathers (/embed_all's), averaged here: the path CUDA and other poolings take
  // (the CPU's mean pools the ids straight from the table).
  auto rows = (*engine)->Step({all_ids, cu_seqlens, {}}, {.output = StepOutput::kTokenEmbeddings});
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_TRUE(rows->Wait().ok());
  for (size_t i = 0; i < reference.texts.size(); ++i) {
    const Tensor sequence = rows->SequenceRows(static_cast<int64_t>(i));
    std::vector<float> mean(static_cast<size_t>(sequence.dim(1)), 0.0f);
    for (int64_t t = 0; t < sequence.dim(0); ++t) {
      for (size_t k = 0; k < mean.size(); ++k) mean[k] += sequence.data<float>()[t * sequence.dim(1) + k] / sequence.dim(0);
    }
    ExpectClose(reference.raw[i], mean, folder + ": text " + std::to_string(i) + " from the gathered rows");
  }
  auto result = (*engine)->Step({all_ids, cu_seqlens, {}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_TRUE(result->Wait().ok());
  for (const bool normalize : {false, true}) {
    // Whole rows, normalised when asked, as the worker finishes them.
    const int64_t width = static_cast<int64_t>(result->Row(0).size());
    std::vector<float> finished(reference.texts.size() * static_cast<size_t>(width));
    ASSERT_TRUE(FinishRows(*result, 0, static_cast<int64_t>(reference.texts.size()), width, normalize, finished.data()).ok());
    const auto& expected = normalize ? reference.normalized : reference.raw;
    for (size_t i = 0; i < reference.texts.size(); ++i) {
      ExpectClose(expected[i], std::span<const float>(finished.data() + i * width, static_cast<size_t>(width)),
                  folder + ": text " + std::to_string(i) + (normalize ? " normalised" : " raw"));
    }
  }
}

TEST(StaticEmbeddingTest, Model2VecFolderMatchesStaticModelEncode) {
  CheckAgainstReference(kData + "tiny-model2vec", kData + "tiny-model2vec");
}

TEST(StaticEmbeddingTest, VocabularyQuantizedModel2VecFolderMatches) {
  CheckAgainstReference(kData + "tiny-model2vec-quantized", kData + "tiny-model2vec-quantized");
}

TEST(StaticEmbeddingTest, SentenceTransformersStaticEmbeddingMatches) {
  CheckAgainstReference(kData + "tiny-static-embedding", kData + "tiny-static-embedding");
}

// A StaticEmbedding whose tokenizer.json carries truncation (16 tokens): its tokenizer cuts.
TEST(StaticEmbeddingTest, StaticEmbeddingTokenizerTruncationCuts) {
  CheckAgainstReference(kData + "tiny-static-embedding-truncated", kData + "tiny-static-embedding-truncated");
}

// Older sentence-transformers save the module under 0_StaticEmbedding/ (what model2vec's own
// loader also accepts): the same tensors and tokenizer there give the same vectors.
TEST(StaticEmbeddingTest, StaticEmbeddingModuleInItsOwnFolder) {
  TempDir dir;
  const fs::path source = kData + "tiny-static-embedding";
  const fs::path module = fs::path(dir.path()) / "0_StaticEmbedding";
  fs::create_directories(module);
  fs::copy_file(source / "model.safetensors", module / "model.safetensors");
  fs::copy_file(source / "tokenizer.json", module / "tokenizer.json");
  fs::copy(source / "1_Normalize", fs::path(dir.path()) / "1_Normalize");
  testing::WriteFile(dir.File("modules.json"),
                     R"([{"idx": 0, "name": "0", "path": "0_StaticEmbedding", "type": "sentence_transformers.models.StaticEmbedding"},
                         {"idx": 1, "name": "1", "path": "1_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  CheckAgainstReference(dir.path(), source.string());
}

TEST(StaticEmbeddingTest, FoldersDescribeThemselves) {
  auto model2vec = ReadModelFolder(kData + "tiny-model2vec");
  ASSERT_TRUE(model2vec.ok()) << model2vec.status().message();
  EXPECT_EQ(model2vec->config.architecture, "StaticModel");
  EXPECT_EQ(model2vec->config.hidden_size, 24);
  EXPECT_EQ(model2vec->config.static_embedding.vocabulary_rows, 600);
  EXPECT_EQ(model2vec->config.vocab_size, 601);  // the empty bag's row
  EXPECT_EQ(model2vec->config.static_embedding.max_length, 16);
  EXPECT_TRUE(model2vec->config.static_embedding.model2vec_rules);
  EXPECT_TRUE(model2vec->sentence_transformers.normalize);
  EXPECT_EQ(MaxSequenceLength(model2vec->config, model2vec->sentence_transformers), 16);
  EXPECT_EQ(DefaultEmbeddingWidth(model2vec->config, model2vec->sentence_transformers), 24);

  auto quantized = ReadModelFolder(kData + "tiny-model2vec-quantized");
  ASSERT_TRUE(quantized.ok()) << quantized.status().message();
  EXPECT_EQ(quantized->config.static_embedding.vocabulary_rows, 600);  // the mapping's length, not the 40 rows
  EXPECT_EQ(quantized->config.static_embedding.max_length, 512);        // model2vec's default
  EXPECT_FALSE(quantized->sentence_transformers.normalize);

  auto module = ReadModelFolder(kData + "tiny-static-embedding");
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(module->config.architecture, "StaticEmbedding");
  EXPECT_FALSE(module->config.static_embedding.model2vec_rules);
  EXPECT_EQ(module->config.static_embedding.max_length, 0);  // StaticEmbedding has no length limit
  EXPECT_TRUE(module->sentence_transformers.normalize);
  EXPECT_EQ(module->sentence_transformers.pooling, ops::PoolingMode::kMean);
  auto truncated = ReadModelFolder(kData + "tiny-static-embedding-truncated");
  ASSERT_TRUE(truncated.ok()) << truncated.status().message();
  EXPECT_EQ(truncated->config.static_embedding.max_length, 16);  // tokenizer.json's truncation
  EXPECT_EQ(MaxSequenceLength(truncated->config, truncated->sentence_transformers), 16);

  // config.json alone does not describe a model2vec model: the reader says where to look.
  auto alone = ReadModelConfig(kData + "tiny-model2vec/config.json");
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("whole folder"), std::string::npos) << alone.status().message();
}

TEST(StaticEmbeddingTest, BrokenFoldersAreRefusedByName) {
  TempDir dir;
  const fs::path source = kData + "tiny-model2vec";
  fs::copy_file(source / "config.json", dir.File("config.json"));
  // No tokenizer.json.
  fs::copy_file(source / "model.safetensors", dir.File("model.safetensors"));
  auto engine = Engine::Load(dir.path());
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("tokenizer.json"), std::string::npos) << engine.status().message();
  // A table under another name.
  fs::copy_file(source / "tokenizer.json", dir.File("tokenizer.json"));
  testing::SafetensorsBuilder builder;
  builder.AddFloats("table", {2, 2}, {1, 2, 3, 4});
  testing::WriteFile(dir.File("model.safetensors"), builder.Bytes());
  engine = Engine::Load(dir.path());
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("'embeddings'"), std::string::npos) << engine.status().message();
}

}  // namespace
}  // namespace stamen::engine
