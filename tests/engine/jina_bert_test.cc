// Issue 48's JinaBERT (jina-embeddings-v2, jina-reranker-v1, and jina-embeddings-v2-base-code's
// jinaai/jina-bert-v2-qk-post-norm) beyond the shared golden checks (golden_test.cc, ≤ 1e-4
// absolute, alone and packed): cosine ≥ 0.9999 to the reference on every golden (a float64
// re-implementation of the hub's remote code, checked against transformers' BERT modules with
// ALiBi as their additive mask and, for qk-post-norm, torch LayerNorms on their query and key and
// around their attention: tools/make_family_goldens.py, tests/engine/data/README.md; the
// qk-post-norm layer order comes from a transformers-style port of that code for
// jina-embeddings-v2-base-code, text-embeddings-inference's jina_code.rs and rtp-llm's weights),
// the ALiBi slopes against the ones the golden run used, what the hub's configs read as, the
// refusal of what the remote code computes otherwise, and of JinaBERT folders handed to another
// reader and the other way round.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/ops/attention.h"
#include "model_folder/json_document.h"
#include "model_folder/model_config.h"
#include "golden_targets.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

using testing::Cosine;
using testing::ReadText;
using testing::TempDir;
using testing::WriteFile;

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";
const char* const kFolders[] = {"tiny-jina-bert", "tiny-jina-reranker-bf16", "tiny-jina-bert-code"};

// `folder`'s config.json with the first `from` replaced by `to`, written into `dir`.
void WriteEditedConfig(const std::string& folder, const std::string& from, const std::string& to, TempDir& dir) {
  std::string json = ReadText(kData + folder + "/config.json");
  const size_t at = json.find(from);
  ASSERT_NE(at, std::string::npos) << folder << " has no " << from;
  json.replace(at, from.size(), to);
  WriteFile(dir.File("config.json"), json);
}

// The error of reading `folder`'s config.json edited so; "" when it reads.
std::string EditedConfigError(const std::string& folder, const std::string& from, const std::string& to) {
  TempDir dir;
  WriteEditedConfig(folder, from, to, dir);
  auto config = ReadModelConfig(dir.File("config.json"));
  return config.ok() ? "" : config.status().message();
}

StatusOr<ModelConfig> Read(const std::string& folder) { return ReadModelConfig(kData + folder + "/config.json"); }

TEST(JinaBertTest, HubConfigsRead) {
  auto embedder = Read("tiny-jina-bert");
  ASSERT_TRUE(embedder.ok()) << embedder.status().message();
  EXPECT_EQ(embedder->family, ModelFamily::kJinaBert);
  EXPECT_EQ(embedder->architecture, "JinaBertForMaskedLM");  // as jina-embeddings-v2 names it
  EXPECT_EQ(embedder->head, ModelHead::kNone);               // served through AutoModel, as sentence-transformers
  EXPECT_EQ(embedder->hidden_act, ops::Activation::kGeluErf);  // feed_forward_type geglu: nn.GELU()
  EXPECT_TRUE(embedder->gated_feed_forward);
  EXPECT_EQ(embedder->num_attention_heads, 6);
  EXPECT_EQ(embedder->type_vocab_size, 2);
  EXPECT_EQ(embedder->max_position_embeddings, 512);
  EXPECT_FALSE(embedder->qk_post_norm);

  // jina-embeddings-v2-base-code: the same classes from jinaai/jina-bert-v2-qk-post-norm.
  auto code = Read("tiny-jina-bert-code");
  ASSERT_TRUE(code.ok()) << code.status().message();
  EXPECT_EQ(code->family, ModelFamily::kJinaBert);
  EXPECT_EQ(code->architecture, "JinaBertForMaskedLM");
  EXPECT_EQ(code->head, ModelHead::kNone);
  EXPECT_TRUE(code->qk_post_norm);
  EXPECT_EQ(code->hidden_act, ops::Activation::kGeluErf);
  EXPECT_TRUE(code->gated_feed_forward);

  auto reranker = Read("tiny-jina-reranker-bf16");
  ASSERT_TRUE(reranker.ok()) << reranker.status().message();
  EXPECT_EQ(reranker->family, ModelFamily::kJinaBert);
  EXPECT_EQ(reranker->head, ModelHead::kSequenceClassification);
  EXPECT_EQ(reranker->num_labels, 1);
  EXPECT_EQ(reranker->num_attention_heads, 12);  // as jina-embeddings-v2-base-en: not a power of two

  // feed_forward_type reglu: JinaBertGLUMLP's ReLU.
  TempDir dir;
  WriteEditedConfig("tiny-jina-bert", R"("feed_forward_type": "geglu")", R"("feed_forward_type": "reglu")", dir);
  auto reglu = ReadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(reglu.ok()) << reglu.status().message();
  EXPECT_EQ(reglu->hidden_act, ops::Activation::kRelu);
}

// ops::AlibiSlopes against the slopes the golden run used (report.json, from the remote code's
// _get_alibi_head_slopes), and the ALiBi paper's closed form for powers of two.
TEST(JinaBertTest, AlibiSlopesAreTheGoldenRunsOnes) {
  for (const std::string folder : kFolders) {
    auto config = Read(folder);
    ASSERT_TRUE(config.ok()) << config.status().message();
    auto report = JsonDocument::Load(kData + folder + "/report.json");
    ASSERT_TRUE(report.ok()) << report.status().message();
    simdjson::dom::array expected;
    ASSERT_EQ(report.value()->root().raw()["checks"]["alibi_slopes"].get(expected), simdjson::SUCCESS);
    const std::vector<float> slopes = ops::AlibiSlopes(config->num_attention_heads);
    ASSERT_EQ(slopes.size(), expected.size()) << folder;
    size_t h = 0;
    for (simdjson::dom::element element : expected) {
      double slope = 0.0;
      ASSERT_EQ(element.get(slope), simdjson::SUCCESS);
      EXPECT_EQ(slopes[h], static_cast<float>(slope)) << folder << " head " << h;  // torch.Tensor(slopes): F32
      ++h;
    }
  }
  const std::vector<float> eight = ops::AlibiSlopes(8);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(eight[h], std::exp2(-(h + 1.0f))) << "head " << h;
  // 12 heads: the 8 above, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (every other slope of 16 heads).
  const std::vector<float> twelve = ops::AlibiSlopes(12);
  ASSERT_EQ(twelve.size(), 12u);
  for (int h = 0; h < 4; ++h) EXPECT_FLOAT_EQ(twelve[8 + h], std::exp2(-(h + 0.5f))) << "head " << 8 + h;
}

// The issue's targets in fp32: cosine ≥ 0.9999 and abs error ≤ 1e-4 to the reference, per token
// (each token's vector), mean-pooled and, for the reranker, logits.
TEST(JinaBertTest, MatchTheReferenceByCosineAndAbsoluteError) {
  for (const std::string folder : kFolders) {
    testing::ExpectMatchesGoldenTargets(kData + folder, folder, 96);
  }
}

// What the remote code computes otherwise is refused, naming the key.
TEST(JinaBertTest, UnsupportedVariantsAreRefused) {
  struct Case {
    const char* from;
    const char* to;
    const char* named;  // in the message
  };
  const Case cases[] = {
      {R"("position_embedding_type": "alibi")", R"("position_embedding_type": "absolute")",
       "'position_embedding_type'"},
      {R"("position_embedding_type": "alibi",)", "", "'position_embedding_type'"},
      {R"("feed_forward_type": "geglu")", R"("feed_forward_type": "original")", "'feed_forward_type'"},
      // Absent, JinaBertConfig's default "original" applies.
      {R"("feed_forward_type": "geglu",)", "", "'feed_forward_type'"},
  };
  for (const Case& c : cases) {
    const std::string error = EditedConfigError("tiny-jina-bert", c.from, c.to);
    EXPECT_NE(error.find(c.named), std::string::npos) << "with " << c.to << ": '" << error << "'";
  }
}

// auto_map's repository decides which layers run: each folder's tensors under the other
// repository's name are refused at load, naming a tensor the other layers have and it lacks.
TEST(JinaBertTest, RepositoryNameDecidesTheLayers) {
  struct Swap {
    const char* folder;
    const char* from;
    const char* to;
    const char* missing;  // a tensor the message names
  };
  for (const Swap& swap :
       {Swap{"tiny-jina-bert", "jina-bert-implementation--configuration_bert",
             "jina-bert-v2-qk-post-norm--configuration_bert", "layer_norm_q"},
        Swap{"tiny-jina-bert-code", "jina-bert-v2-qk-post-norm--configuration_bert",
             "jina-bert-implementation--configuration_bert", "gated_layers"}}) {
    TempDir dir;
    WriteEditedConfig(swap.folder, swap.from, swap.to, dir);
    std::filesystem::copy_file(kData + swap.folder + "/model.safetensors", dir.File("model.safetensors"));
    auto engine = Engine::Load(dir.path(), {.num_threads = 1});
    ASSERT_FALSE(engine.ok()) << swap.folder << " as " << swap.to;
    EXPECT_NE(engine.status().message().find(swap.missing), std::string::npos) << engine.status().message();
  }
}

// Each JinaBERT folder handed to another family's reader (BERT's above all: the folders say
// model_type "bert") is refused by its auto_map, naming the class.
TEST(JinaBertTest, HubFoldersRefusedByOtherReaders) {
  struct WrongReader {
    const char* folder;
    const char* architecture;
    const char* other;
  };
  for (const WrongReader& wrong :
       {WrongReader{"tiny-jina-bert", "\"JinaBertForMaskedLM\"", "\"BertModel\""},
        WrongReader{"tiny-jina-bert", "\"JinaBertForMaskedLM\"", "\"BertForMaskedLM\""},
        WrongReader{"tiny-jina-bert", "\"JinaBertForMaskedLM\"", "\"NomicBertModel\""},
        WrongReader{"tiny-jina-reranker-bf16", "\"JinaBertForSequenceClassification\"",
                    "\"BertForSequenceClassification\""}}) {
    const std::string error = EditedConfigError(wrong.folder, wrong.architecture, wrong.other);
    EXPECT_NE(error.find("'JinaBertConfig'"), std::string::npos) << wrong.folder << " as " << wrong.other << ": " << error;
    EXPECT_NE(error.find("does not implement"), std::string::npos) << error;
  }
  // Without architectures, model_type "bert" alone still meets the auto_map.
  const std::string untyped = EditedConfigError("tiny-jina-bert", R"("architectures": [)", R"("unused": [)");
  EXPECT_NE(untyped.find("'JinaBertConfig'"), std::string::npos) << untyped;
}

// Other families' folders handed to JinaBERT's reader are refused: BERT's (absolute positions,
// no auto_map) by its position_embedding_type, hub folders by their auto_map's classes.
TEST(JinaBertTest, OtherFoldersRefusedByJinaBert) {
  constexpr std::string_view kBert = "\"BertForSequenceClassification\"";
  const std::string jina = "\"JinaBertForSequenceClassification\"";
  {
    TempDir dir;
    WriteEditedConfig("tiny-bert-classifier", std::string(kBert), jina, dir);
    auto config = ReadModelConfig(dir.File("config.json"));
    ASSERT_FALSE(config.ok());
    EXPECT_NE(config.status().message().find("'position_embedding_type'"), std::string::npos)
        << config.status().message();
  }
  {
    // A BERT folder whose config claims ALiBi still lacks JinaBERT's gated layers: refused at load.
    TempDir dir;
    WriteEditedConfig("tiny-bert-classifier", std::string(kBert),
                      jina + R"(], "position_embedding_type": "alibi", "feed_forward_type": "geglu", "unused": [)",
                      dir);
    std::filesystem::copy_file(kData + "tiny-bert-classifier/model.safetensors", dir.File("model.safetensors"));
    auto engine = Engine::Load(dir.path(), {.num_threads = 1});
    ASSERT_FALSE(engine.ok());
    EXPECT_NE(engine.status().message().find("gated_layers"), std::string::npos) << engine.status().message();
  }
  const std::string gte = EditedConfigError("tiny-gte-hub-ntk-f16", "\"NewModel\"", "\"JinaBertModel\"");
  EXPECT_NE(gte.find("'NewConfig'"), std::string::npos) << gte;
  const std::string nomic = EditedConfigError("tiny-nomic-bert-hub-bf16", "\"NomicBertModel\"", "\"JinaBertModel\"");
  EXPECT_NE(nomic.find("'NomicBertConfig'"), std::string::npos) << nomic;
}

}  // namespace
}  // namespace stamen::engine
