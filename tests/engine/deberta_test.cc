// DeBERTa end to end: tiny-deberta-v3-reranker's tokenizer.json (written by transformers'
// DebertaV2Tokenizer: Unigram, Metaspace, the [CLS] A [SEP] B [SEP] template with [CLS] 1,
// [SEP] 2), and the same weights with only spm.model beside them, through ModelTokenizer,
// against the ids, token types and logits transformers gives (tokenizer_reference.json); then
// the config options the family refuses by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <simdjson.h>

#include "engine/engine.h"
#include "model_folder/model_config.h"
#include "model_folder/model_tokenizer.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

const std::string kReranker = std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-deberta-v3-reranker";

std::vector<int32_t> Ints(simdjson::dom::element array) {
  std::vector<int32_t> values;
  for (simdjson::dom::element value : array.get_array()) values.push_back(static_cast<int32_t>(int64_t(value)));
  return values;
}

std::string Text(simdjson::dom::element value) { return std::string(value.get_string().value()); }

// Loads `folder` (config, weights, tokenizer) and checks ModelTokenizer's ids and token types
// and the engine's scores against `reference_path` (singles' ids; pairs' ids, types, logits).
void ExpectMatchesReference(const std::string& folder, const std::string& reference_path, int expected_pairs) {
  auto config = ReadModelConfig(folder + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  auto tokenizer = ModelTokenizer::Load(folder, *config);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  auto engine = Engine::Load(folder, {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  simdjson::dom::parser parser;
  simdjson::dom::element reference;
  ASSERT_EQ(parser.load(reference_path).get(reference), simdjson::SUCCESS);

  for (simdjson::dom::element single : reference["singles"].get_array()) {
    const std::string text = Text(single["text"]);
    std::vector<int32_t> ids;
    (*tokenizer)->Encode(text, 0, &ids);
    EXPECT_EQ(ids, Ints(single["ids"])) << "'" << text << "'";
  }
  int pairs = 0;
  for (simdjson::dom::element pair : reference["pairs"].get_array()) {
    const std::string first = Text(pair["first"]), second = Text(pair["second"]);
    std::vector<int32_t> ids, type_ids;
    (*tokenizer)->EncodePair(first, second, 0, &ids, &type_ids);
    EXPECT_EQ(ids, Ints(pair["ids"])) << "'" << first << "' / '" << second << "'";
    EXPECT_EQ(type_ids, Ints(pair["type_ids"])) << "'" << first << "' / '" << second << "'";
    const std::vector<int32_t> bounds = {0, static_cast<int32_t>(ids.size())};
    // As the gateway sends them: token types only to a model with more than one (v3 has none).
    const std::vector<int32_t> sent_types = config->type_vocab_size > 1 ? type_ids : std::vector<int32_t>{};
    auto scores = (*engine)->Step({ids, bounds, sent_types}, {.output = StepOutput::kScores});
    ASSERT_TRUE(scores.ok()) << scores.status().message();
    ASSERT_TRUE(scores->Wait().ok());
    const double expected = double(pair["logits"].at(0));
    EXPECT_NEAR(scores->values().data<float>()[0], expected, 1e-4) << "'" << first << "' / '" << second << "'";
    ++pairs;
  }
  EXPECT_EQ(pairs, expected_pairs);
}

TEST(DebertaTest, TokenizerAndRerankerMatchTransformers) {
  ExpectMatchesReference(kReranker, kReranker + "/tokenizer_reference.json", 5);
}

// A reranker folder as the Hub's DeBERTa-v3 ones without tokenizer.json: config.json, weights,
// spm.model and tokenizer_config.json (tiny-deberta-v3-spm-reranker holds the tokenizer half,
// made by tools/make_deberta_spm_reranker.py, and the ids and logits transformers gives).
TEST(DebertaTest, FolderWithOnlySpmModelServesAsTransformersTokenizesIt) {
  const std::string tokenizer_half = std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-deberta-v3-spm-reranker";
  testing::TempDir folder;
  ASSERT_FALSE(folder.path().empty());
  for (const char* name : {"config.json", "model.safetensors"}) {
    std::filesystem::copy_file(kReranker + "/" + name, folder.File(name));
  }
  for (const char* name : {"spm.model", "tokenizer_config.json"}) {
    std::filesystem::copy_file(tokenizer_half + "/" + name, folder.File(name));
  }
  auto config = ReadModelConfig(folder.File("config.json"));
  ASSERT_TRUE(config.ok()) << config.status().message();
  auto tokenizer = ModelTokenizer::Load(folder.path(), *config);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_EQ((*tokenizer)->source(), folder.File("spm.model"));
  EXPECT_EQ((*tokenizer)->VocabularySize(), 1000u);  // 999 pieces and [MASK]
  ExpectMatchesReference(folder.path(), tokenizer_half + "/tokenizer_reference.json", 5);
}

// A copy of tiny-deberta-v3's config.json with `replace` put in place of `original`.
StatusOr<ModelConfig> ConfigWith(const testing::TempDir& dir, const std::string& original, const std::string& replace) {
  std::ifstream file(std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-deberta-v3/config.json");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t at = text.find(original);
  if (at == std::string::npos) return Status::Error("no '" + original + "' in the config");
  text.replace(at, original.size(), replace);
  testing::WriteFile(dir.path() + "/config.json", text);
  return ReadModelConfig(dir.path() + "/config.json");
}

TEST(DebertaTest, ConfigReadsTheV3SettingsAndRefusesWhatItDoesNotRun) {
  testing::TempDir dir;
  auto plain = ConfigWith(dir, "\"vocab_size\"", "\"vocab_size\"");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->family, ModelFamily::kDeberta);
  EXPECT_TRUE(plain->disentangled.relative_attention && plain->disentangled.share_att_key);
  EXPECT_TRUE(plain->disentangled.content_to_position && plain->disentangled.position_to_content);
  EXPECT_TRUE(plain->disentangled.norm_relative_embeddings);
  EXPECT_FALSE(plain->disentangled.position_biased_input);
  EXPECT_EQ(plain->disentangled.position_buckets, 32);
  EXPECT_EQ(plain->disentangled.max_relative_positions, 512);  // -1 → max_position_embeddings
  EXPECT_EQ(plain->type_vocab_size, 0);

  auto legacy = ConfigWith(dir, "\"pos_att_type\": [\n    \"p2c\",\n    \"c2p\"\n  ]", "\"pos_att_type\": \"C2P | p2c\"");
  ASSERT_TRUE(legacy.ok()) << legacy.status().message();
  EXPECT_TRUE(legacy->disentangled.content_to_position && legacy->disentangled.position_to_content);

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"\"vocab_size\": 1000", "\"vocab_size\": 1000, \"conv_kernel_size\": 3"},
      {"\"vocab_size\": 1000", "\"vocab_size\": 1000, \"embedding_size\": 32"},
      {"\"pooler_hidden_size\": 64", "\"pooler_hidden_size\": 128"},
      {"\"c2p\"", "\"p2p\""},
      {"\"norm_rel_ebd\": \"layer_norm\"", "\"norm_rel_ebd\": \"batch_norm\""},
  };
  for (const auto& [original, replace] : refused) {
    auto config = ConfigWith(dir, original, replace);
    ASSERT_FALSE(config.ok()) << replace;
    EXPECT_NE(config.status().message().find("key '"), std::string::npos) << config.status().message();
  }
  auto conv = ConfigWith(dir, "\"vocab_size\": 1000", "\"vocab_size\": 1000, \"conv_kernel_size\": 3");
  ASSERT_FALSE(conv.ok());
  EXPECT_NE(conv.status().message().find("'conv_kernel_size' is 3; DeBERTa's convolution layer"), std::string::npos)
      << conv.status().message();
}

}  // namespace
}  // namespace stamen::engine
