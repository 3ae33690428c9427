// The model_folder library alone, without an engine: the one profile of a model folder (what
// it serves, its widths, its maximum length, sparse or not, its default pooling) that the
// gateway and the worker both use. The expected values are what transformers and
// sentence-transformers make of the same files: the folders' config.json fields (recorded in
// each golden's report.json by transformers 5.24), a RoBERTa's positions starting after its pad
// id (transformers' create_position_ids, so max_position_embeddings − pad − 1 tokens),
// sentence-transformers' max_seq_length capping it, its Dense modules' out_features giving the
// width, and a …ForMaskedLM model served as SPLADE.
#include "model_folder/model_profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "model_folder/model_options.h"
#include "model_folder/yes_no_reranker.h"
#include "temp_dir.h"

namespace stamen::engine {
namespace {

namespace fs = std::filesystem;

std::string Golden(const std::string& name) { return std::string(STAMEN_ENGINE_TEST_DATA) + "/" + name; }

ModelProfile ProfileOfFolder(const std::string& folder, std::optional<bool> yes_no_reranker = false) {
  auto model = ReadModelFolder(folder);
  EXPECT_TRUE(model.ok()) << folder << ": " << model.status().message();
  if (!model.ok()) return {};
  const Status resolved = ResolveYesNoReranker(folder, yes_no_reranker, model->sentence_transformers, &model->config);
  EXPECT_TRUE(resolved.ok()) << resolved.message();
  return ProfileOf(model->config, model->sentence_transformers);
}

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(ModelProfileTest, AnEncoderWithoutModulesHasNoDefaultPooling) {
  const ModelProfile profile = ProfileOfFolder(Golden("tiny-camembert"));
  EXPECT_EQ(profile.kind, ModelKind::kEmbedding);
  EXPECT_FALSE(profile.default_pooling.has_value());
  EXPECT_FALSE(profile.sparse);
  EXPECT_EQ(profile.embedding_width, 64);  // hidden_size
  EXPECT_EQ(profile.pooled_width, 64);
  EXPECT_EQ(profile.hidden_size, 64);
  EXPECT_EQ(profile.vocabulary_size, 1000);
  EXPECT_EQ(profile.max_sequence_length, 512);  // a RoBERTa: 514 positions from pad 1 + 1
  EXPECT_EQ(profile.type_vocabulary_size, 1);
  EXPECT_EQ(profile.num_labels, 0);
}

TEST(ModelProfileTest, AMaskedLanguageModelIsSparseOverItsVocabulary) {
  for (const char* folder : {"tiny-bert-splade", "tiny-distilbert-splade", "tiny-roberta-splade"}) {
    const ModelProfile profile = ProfileOfFolder(Golden(folder));
    EXPECT_EQ(profile.kind, ModelKind::kEmbedding) << folder;
    EXPECT_EQ(profile.default_pooling, ops::PoolingMode::kSplade) << folder;
    EXPECT_TRUE(profile.sparse) << folder;
    EXPECT_EQ(profile.embedding_width, 1000) << folder;  // vocab_size
    EXPECT_EQ(profile.pooled_width, 64) << folder;        // what --pooling mean would give
    EXPECT_EQ(profile.EmbeddingWidthWith(ops::PoolingMode::kMean), 64) << folder;
    EXPECT_EQ(profile.EmbeddingWidthWith(ops::PoolingMode::kSplade), 1000) << folder;
  }
}

TEST(ModelProfileTest, ClassificationHeadsAreRerankersWithOneLabelAndClassifiersWithMore) {
  const ModelProfile roberta = ProfileOfFolder(Golden("tiny-roberta-classifier"));
  EXPECT_EQ(roberta.kind, ModelKind::kClassifier);
  EXPECT_EQ(roberta.num_labels, 2);
  EXPECT_EQ(roberta.type_vocabulary_size, 1);
  const ModelProfile three = ProfileOfFolder(Golden("tiny-qwen3-classifier-3"));
  EXPECT_EQ(three.kind, ModelKind::kClassifier);
  EXPECT_EQ(three.num_labels, 3);
  EXPECT_EQ(three.type_vocabulary_size, 0);  // a decoder: no token types
  const ModelProfile one = ProfileOfFolder(Golden("tiny-qwen3-classifier"));
  EXPECT_EQ(one.kind, ModelKind::kReranker);
  EXPECT_EQ(one.num_labels, 1);
  EXPECT_EQ(ModelKindName(one.kind), "reranker");
  EXPECT_EQ(ModelKindName(roberta.kind), "classifier");
}

TEST(ModelProfileTest, ACausalLanguageModelIsAYesNoRerankerOnlyWhenResolvedAsOne) {
  const ModelProfile reranker = ProfileOfFolder(Golden("tiny-qwen3-reranker"), std::nullopt);  // auto: no modules.json
  EXPECT_EQ(reranker.kind, ModelKind::kReranker);
  EXPECT_EQ(reranker.num_labels, 1);
  const ModelProfile embedder = ProfileOfFolder(Golden("tiny-qwen3-reranker"), false);
  EXPECT_EQ(embedder.kind, ModelKind::kEmbedding);
  EXPECT_EQ(embedder.default_pooling, ops::PoolingMode::kLastToken);  // causal
  EXPECT_EQ(embedder.num_labels, 0);
}

TEST(ModelProfileTest, SentenceTransformersModulesSetPoolingWidthAndLength) {
  test::TempDir folder("stamen_profile");
  const fs::path root = folder.path();
  fs::copy_file(Golden("tiny-camembert") + "/config.json", root / "config.json");
  Write(root / "modules.json", R"([
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
    {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  Write(root / "1_Pooling" / "config.json", R"({"word_embedding_dimension": 64, "pooling_mode_cls_token": false,
    "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false})");
  Write(root / "2_Dense" / "config.json", R"({"in_features": 64, "out_features": 24, "bias": true,
    "activation_function": "torch.nn.modules.activation.Tanh"})");
  Write(root / "sentence_bert_config.json", R"({"max_seq_length": 128, "do_lower_case": false})");
  const ModelProfile profile = ProfileOfFolder(root.string());
  EXPECT_EQ(profile.kind, ModelKind::kEmbedding);
  EXPECT_EQ(profile.default_pooling, ops::PoolingMode::kMean);
  EXPECT_FALSE(profile.sparse);
  EXPECT_EQ(profile.embedding_width, 24);  // the Dense module's out_features
  EXPECT_EQ(profile.pooled_width, 24);
  EXPECT_EQ(profile.hidden_size, 64);      // token states stay the transformer's width
  EXPECT_EQ(profile.max_sequence_length, 128);
  // A max_seq_length beyond the positions does not lift the model's own limit.
  Write(root / "sentence_bert_config.json", R"({"max_seq_length": 4096})");
  EXPECT_EQ(ProfileOfFolder(root.string()).max_sequence_length, 512);
}

TEST(ModelProfileTest, AStaticEmbeddingFolderPoolsByMean) {
  const ModelProfile profile = ProfileOfFolder(Golden("tiny-model2vec"));
  EXPECT_EQ(profile.kind, ModelKind::kEmbedding);
  EXPECT_EQ(profile.default_pooling, ops::PoolingMode::kMean);
  EXPECT_EQ(profile.embedding_width, profile.hidden_size);
  EXPECT_GT(profile.embedding_width, 0);
}

// The real folders' heads: only the …ForMaskedLM ones can pool with splade (model_options_test
// checks the rule on configs alone).
TEST(ModelProfileTest, OnlyTheMaskedLanguageModelFoldersPoolWithSplade) {
  auto splade = ReadModelFolder(Golden("tiny-bert-splade"));
  auto plain = ReadModelFolder(Golden("tiny-mpnet"));
  ASSERT_TRUE(splade.ok() && plain.ok());
  EXPECT_TRUE(CheckPoolingFitsModel(splade->config, ops::PoolingMode::kSplade).ok());
  EXPECT_TRUE(CheckPoolingFitsModel(splade->config, ops::PoolingMode::kMean).ok());
  const Status refused = CheckPoolingFitsModel(plain->config, ops::PoolingMode::kSplade);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("masked-LM"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace stamen::engine
