// Yes/no LLM rerankers' templates (model_folder/yes_no_reranker.h) beyond the golden checks
// (golden_test.cc): the presets, the family defaults, yes_no_reranker.json and its errors,
// which tokens a folder scores, and the truncation rule of ModelTokenizer::EncodeYesNoPair.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "model_folder/model_config.h"
#include "model_folder/model_tokenizer.h"
#include "model_folder/yes_no_reranker.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

using testing::TempDir;
using testing::WriteFile;

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

// A copy of a test folder whose yes_no_reranker.json a test may write.
std::string CopyFolder(const TempDir& dir, const std::string& model) {
  const std::string folder = dir.path() + "/model";
  std::filesystem::copy(kData + model, folder, std::filesystem::copy_options::recursive);
  return folder;
}

// The ids of `text` alone, without special tokens (as each part is encoded).
std::vector<int32_t> PartIds(ModelTokenizer& tokenizer, const std::string& text) {
  YesNoTemplate alone;
  alone.parts = {text, "{query}{document}"};
  std::vector<int32_t> ids;
  tokenizer.EncodeYesNoPair(alone, "", "", 0, &ids);
  return ids;
}

TEST(YesNoPresetTest, NamesAndFamilyDefaults) {
  for (std::string_view name : {"qwen3-reranker", "mxbai-rerank-v2", "bge-reranker-v2-gemma"}) {
    auto preset = FindYesNoPreset(name);
    ASSERT_TRUE(preset.has_value()) << name;
    EXPECT_EQ(preset->preset, name);
    EXPECT_FALSE(preset->yes_token.empty());
  }
  // The layer-wise reranker's preset scores through its heads, no token.
  ASSERT_TRUE(FindYesNoPreset("bge-reranker-v2.5-gemma2-lightweight").has_value());
  EXPECT_TRUE(FindYesNoPreset("bge-reranker-v2.5-gemma2-lightweight")->yes_token.empty());
  EXPECT_FALSE(FindYesNoPreset("qwen3").has_value());
  EXPECT_EQ(DefaultYesNoPreset(ModelFamily::kQwen3), "qwen3-reranker");
  EXPECT_EQ(DefaultYesNoPreset(ModelFamily::kLlama), "qwen3-reranker");
  EXPECT_EQ(DefaultYesNoPreset(ModelFamily::kQwen2), "mxbai-rerank-v2");
  EXPECT_EQ(DefaultYesNoPreset(ModelFamily::kGemma), "bge-reranker-v2-gemma");
  EXPECT_EQ(DefaultYesNoPreset(ModelFamily::kGemma2), "bge-reranker-v2-gemma");

  const YesNoTemplate mxbai = *FindYesNoPreset("mxbai-rerank-v2");
  EXPECT_EQ(mxbai.yes_token, "1");
  EXPECT_EQ(mxbai.no_token, "0");
  EXPECT_EQ(mxbai.instruction, "");
  const YesNoTemplate gemma = *FindYesNoPreset("bge-reranker-v2-gemma");
  EXPECT_EQ(gemma.yes_token, "Yes");
  EXPECT_EQ(gemma.no_token, "");  // logit("Yes") alone
  EXPECT_EQ(gemma.parts, (std::vector<std::string>{"<bos>", "A: {query}", "\n", "B: {document}", "\n", "{instruction}"}));
}

TEST(YesNoPresetTest, FormatsPlaceholdersOfTheTemplateOnly) {
  EXPECT_EQ(FormatYesNoPart("<Q>: {query} <D>: {document} ({instruction})", "i", "{document}", "d"),
            "<Q>: {document} <D>: d (i)");
  const YesNoPartKind kind = KindOfYesNoPart("instruction: {instruction}\n");
  EXPECT_TRUE(kind.instruction);
  EXPECT_FALSE(kind.query || kind.document);
}

TEST(YesNoTemplateFileTest, FamilyDefaultWithoutAFileAndTheInstructionOverride) {
  TempDir dir;
  auto qwen2 = ReadYesNoTemplate(dir.path(), ModelFamily::kQwen2);
  ASSERT_TRUE(qwen2.ok()) << qwen2.status().message();
  EXPECT_EQ(qwen2->preset, "mxbai-rerank-v2");
  auto qwen3 = ReadYesNoTemplate(dir.path(), ModelFamily::kQwen3, "Rank code");
  ASSERT_TRUE(qwen3.ok());
  EXPECT_EQ(qwen3->preset, "qwen3-reranker");
  EXPECT_EQ(qwen3->instruction, "Rank code");
  EXPECT_EQ(qwen3->parts.size(), 3u);
}

TEST(YesNoTemplateFileTest, PresetPartsTokensAndTheFirstDesignsKeys) {
  TempDir dir;
  const std::string file = dir.File(std::string(kYesNoTemplateFile));
  WriteFile(file, R"({"preset": "bge-reranker-v2-gemma", "no_token": "No", "instruction": "Is B about A?"})");
  auto gemma = ReadYesNoTemplate(dir.path(), ModelFamily::kQwen3);
  ASSERT_TRUE(gemma.ok()) << gemma.status().message();
  EXPECT_EQ(gemma->preset, "bge-reranker-v2-gemma");
  EXPECT_EQ(gemma->no_token, "No");
  EXPECT_EQ(gemma->instruction, "Is B about A?");

  WriteFile(file, R"({"parts": ["Q: {query}", " D: {document}", " {instruction}"], "yes_token": "true", "no_token": ""})");
  auto parts = ReadYesNoTemplate(dir.path(), ModelFamily::kLlama);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  EXPECT_EQ(parts->parts, (std::vector<std::string>{"Q: {query}", " D: {document}", " {instruction}"}));
  EXPECT_EQ(parts->yes_token, "true");
  EXPECT_EQ(parts->no_token, "");

  // prefix / body / suffix set qwen3-reranker's three parts, as before.
  WriteFile(file, R"({"body": "{query} | {document}", "yes_token": "Y"})");
  auto legacy = ReadYesNoTemplate(dir.path(), ModelFamily::kQwen3);
  ASSERT_TRUE(legacy.ok()) << legacy.status().message();
  const YesNoTemplate qwen3 = *FindYesNoPreset("qwen3-reranker");
  EXPECT_EQ(legacy->parts, (std::vector<std::string>{qwen3.parts[0], "{query} | {document}", qwen3.parts[2]}));
  EXPECT_EQ(legacy->yes_token, "Y");
  EXPECT_EQ(legacy->no_token, "no");
}

TEST(YesNoTemplateFileTest, ErrorsNameTheFileAndKey) {
  TempDir dir;
  const std::string file = dir.File(std::string(kYesNoTemplateFile));
  const std::pair<std::string, std::string> cases[] = {
      {R"({"preset": "qwen3"})", "key 'preset' names no preset"},
      {R"({"parts": "{query}{document}"})", "key 'parts' must be an array of strings"},
      {R"({"parts": ["{query}", 3]})", "key 'parts' must be an array of strings"},
      {R"({"parts": []})", "key 'parts' must not be empty"},
      {R"({"parts": ["{query}"]})", "key 'parts' must hold {query} and {document}"},
      {R"({"parts": ["{query}{document}"], "body": "x"})", "key 'body' cannot be given with 'parts'"},
      {R"({"preset": "mxbai-rerank-v2", "prefix": "x"})", "key 'prefix' sets a qwen3-reranker part"},
      {R"({"yes_token": ""})", "key 'yes_token' must not be empty"},
      {R"({"no_token": 0})", "key 'no_token' must be a string"},
  };
  for (const auto& [json, message] : cases) {
    WriteFile(file, json);
    auto prompt = ReadYesNoTemplate(dir.path(), ModelFamily::kQwen3);
    ASSERT_FALSE(prompt.ok()) << json;
    EXPECT_NE(prompt.status().message().find(file), std::string::npos) << prompt.status().message();
    EXPECT_NE(prompt.status().message().find(message), std::string::npos) << prompt.status().message();
  }
}

// The scored tokens: {no, yes} by default for Qwen2 ("0", "1"), {yes} for Gemma ("Yes"), and
// what yes_no_reranker.json names.
TEST(YesNoResolveTest, ScoredTokensFollowTheTemplate) {
  const std::string mxbai = kData + "tiny-qwen2-mxbai-reranker";
  auto config = ReadModelConfig(mxbai + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  auto tokenizer = ModelTokenizer::Load(mxbai, *config);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  ASSERT_TRUE(ResolveYesNoReranker(mxbai, std::nullopt, {}, &*config).ok());
  const std::vector<int32_t> zero = PartIds(**tokenizer, "0"), one = PartIds(**tokenizer, "1");
  ASSERT_EQ(zero.size(), 1u);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(config->yes_no_token_ids, (std::vector<int32_t>{zero[0], one[0]}));
  EXPECT_EQ(config->id2label, std::vector<std::string>{"1"});

  TempDir dir;
  const std::string gemma = CopyFolder(dir, "tiny-gemma-reranker");
  auto gemma_config = ReadModelConfig(gemma + "/config.json");
  ASSERT_TRUE(gemma_config.ok()) << gemma_config.status().message();
  EXPECT_EQ(gemma_config->family, ModelFamily::kGemma);
  EXPECT_EQ(gemma_config->hidden_act, ops::Activation::kGeluTanh);  // the legacy "gelu"
  EXPECT_TRUE(gemma_config->tie_word_embeddings);
  ModelConfig resolved = *gemma_config;
  ASSERT_TRUE(ResolveYesNoReranker(gemma, std::nullopt, {}, &resolved).ok());
  ASSERT_EQ(resolved.yes_no_token_ids.size(), 1u);
  auto gemma_tokenizer = ModelTokenizer::Load(gemma, *gemma_config);
  ASSERT_TRUE(gemma_tokenizer.ok());
  const std::vector<int32_t> yes = PartIds(**gemma_tokenizer, "Yes");
  ASSERT_EQ(yes.size(), 1u);
  EXPECT_EQ(resolved.yes_no_token_ids[0], yes[0]);

  // A token the tokenizer lacks is refused, naming it.
  WriteFile(gemma + "/" + std::string(kYesNoTemplateFile), R"({"no_token": "Nope-not-a-token"})");
  resolved = *gemma_config;
  const Status refused = ResolveYesNoReranker(gemma, std::nullopt, {}, &resolved);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("Nope-not-a-token"), std::string::npos) << refused.message();
}

// A layer-wise CostWiseGemmaForCausalLM: the lightweight preset by default (FlagEmbedding's
// LightweightLLMReranker prompt, no scored token), every layer by default, the file's cutoff_layer
// when it names a layer with a head; a token-less preset or a cut-off on a token reranker is refused.
TEST(YesNoResolveTest, LayerWiseRerankerTakesItsCutoffFromTheFile) {
  TempDir dir;
  const std::string costwise = CopyFolder(dir, "tiny-gemma2-costwise-reranker");
  auto config = ReadModelConfig(costwise + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  ModelConfig resolved = *config;
  ASSERT_TRUE(ResolveYesNoReranker(costwise, std::nullopt, {}, &resolved).ok());
  EXPECT_EQ(resolved.cutoff_layer, 4);
  EXPECT_EQ(resolved.head, ModelHead::kSequenceClassification);
  EXPECT_EQ(resolved.num_labels, 1);
  EXPECT_TRUE(resolved.yes_no_token_ids.empty());
  EXPECT_TRUE(resolved.yes_no_reranker());
  auto prompt = ReadYesNoTemplate(costwise, resolved);
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  EXPECT_EQ(prompt->preset, "bge-reranker-v2.5-gemma2-lightweight");
  EXPECT_EQ(prompt->instruction, "Predict whether passage B contains an answer to query A.");
  EXPECT_EQ(prompt->parts, FindYesNoPreset("bge-reranker-v2-gemma")->parts);
  EXPECT_TRUE(prompt->yes_token.empty());
  // Chosen off: an embedder of every layer.
  resolved = *config;
  ASSERT_TRUE(ResolveYesNoReranker(costwise, false, {}, &resolved).ok());
  EXPECT_EQ(resolved.cutoff_layer, 0);
  EXPECT_FALSE(resolved.yes_no_reranker());

  const std::string file = costwise + "/" + std::string(kYesNoTemplateFile);
  WriteFile(file, R"({"cutoff_layer": 3, "instruction": "Is B about A?"})");
  resolved = *config;
  ASSERT_TRUE(ResolveYesNoReranker(costwise, std::nullopt, {}, &resolved).ok());
  EXPECT_EQ(resolved.cutoff_layer, 3);
  EXPECT_EQ(resolved.RunLayers(), 3);
  WriteFile(file, R"({"cutoff_layer": 5})");
  resolved = *config;
  const Status past = ResolveYesNoReranker(costwise, std::nullopt, {}, &resolved);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.message().find("5, is not a layer with a head"), std::string::npos) << past.message();
  EXPECT_NE(past.message().find("allowed: 2, 3, 4"), std::string::npos) << past.message();

  TempDir gemma_dir;
  const std::string gemma = CopyFolder(gemma_dir, "tiny-gemma-reranker");
  auto gemma_config = ReadModelConfig(gemma + "/config.json");
  ASSERT_TRUE(gemma_config.ok());
  WriteFile(gemma + "/" + std::string(kYesNoTemplateFile), R"({"cutoff_layer": 1})");
  resolved = *gemma_config;
  const Status cutoff = ResolveYesNoReranker(gemma, std::nullopt, {}, &resolved);
  ASSERT_FALSE(cutoff.ok());
  EXPECT_NE(cutoff.message().find("'cutoff_layer' applies to layer-wise rerankers"), std::string::npos)
      << cutoff.message();
  WriteFile(gemma + "/" + std::string(kYesNoTemplateFile), R"({"preset": "bge-reranker-v2.5-gemma2-lightweight"})");
  resolved = *gemma_config;
  const Status tokenless = ResolveYesNoReranker(gemma, std::nullopt, {}, &resolved);
  ASSERT_FALSE(tokenless.ok());
  EXPECT_NE(tokenless.message().find("scores no token"), std::string::npos) << tokenless.message();
}

// Too long a pair loses query and document tokens only: the query beside a separate document
// keeps at most 3/4 of the room, the document is cut first, each from its end; a part holding
// both (Qwen3's body) is cut from its end.
TEST(YesNoTruncationTest, CutsQueryAndDocumentPartsOnly) {
  const std::string folder = kData + "tiny-qwen2-mxbai-reranker";
  auto config = ReadModelConfig(folder + "/config.json");
  ASSERT_TRUE(config.ok());
  auto loaded = ModelTokenizer::Load(folder, *config);
  ASSERT_TRUE(loaded.ok());
  ModelTokenizer& tokenizer = **loaded;
  const YesNoTemplate mxbai = *FindYesNoPreset("mxbai-rerank-v2");
  std::string query, document;
  for (int i = 0; i < 40; ++i) query += "what is the capital of china? ";
  for (int i = 0; i < 40; ++i) document += "The capital of China is Beijing. ";
  std::vector<int32_t> full, cut;
  tokenizer.EncodeYesNoPair(mxbai, query, document, 0, &full);
  const size_t max_length = 120;
  ASSERT_GT(full.size(), max_length);
  tokenizer.EncodeYesNoPair(mxbai, query, document, max_length, &cut);
  EXPECT_EQ(cut.size(), max_length);

  // Fixed parts (the instruction part is left out: mxbai's default instruction is empty).
  size_t fixed = 0;
  std::vector<int32_t> prefix = PartIds(tokenizer, mxbai.parts[0]);
  std::vector<int32_t> tail;
  for (size_t i = 5; i < mxbai.parts.size(); ++i) {
    const std::vector<int32_t> ids = PartIds(tokenizer, mxbai.parts[i]);
    tail.insert(tail.end(), ids.begin(), ids.end());
  }
  const std::vector<int32_t> sep = PartIds(tokenizer, "\n");
  fixed = prefix.size() + sep.size() + tail.size();
  const size_t budget = max_length - fixed;
  const std::vector<int32_t> query_ids = PartIds(tokenizer, "query: " + query);
  const std::vector<int32_t> document_ids = PartIds(tokenizer, "document: " + document);
  const size_t query_kept = std::min(query_ids.size(), budget * 3 / 4);
  std::vector<int32_t> expected = prefix;
  expected.insert(expected.end(), query_ids.begin(), query_ids.begin() + query_kept);
  expected.insert(expected.end(), sep.begin(), sep.end());
  expected.insert(expected.end(), document_ids.begin(), document_ids.begin() + (budget - query_kept));
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(cut, expected);

  // A short query keeps all its tokens; the document takes the rest.
  tokenizer.EncodeYesNoPair(mxbai, "capital?", document, max_length, &cut);
  EXPECT_EQ(cut.size(), max_length);
  const std::vector<int32_t> short_query = PartIds(tokenizer, "query: capital?");
  EXPECT_TRUE(std::equal(short_query.begin(), short_query.end(), cut.begin() + prefix.size()));

  // Qwen3's template: the body (query and document in one part) is cut from its end.
  const YesNoTemplate qwen3 = *FindYesNoPreset("qwen3-reranker");
  tokenizer.EncodeYesNoPair(qwen3, query, document, max_length, &cut);
  EXPECT_EQ(cut.size(), max_length);
  const std::vector<int32_t> qwen3_prefix = PartIds(tokenizer, qwen3.parts[0]);
  const std::vector<int32_t> qwen3_suffix = PartIds(tokenizer, qwen3.parts[2]);
  const std::vector<int32_t> body = PartIds(tokenizer, FormatYesNoPart(qwen3.parts[1], qwen3.instruction, query, document));
  std::vector<int32_t> qwen3_expected = qwen3_prefix;
  qwen3_expected.insert(qwen3_expected.end(), body.begin(),
                        body.begin() + (max_length - qwen3_prefix.size() - qwen3_suffix.size()));
  qwen3_expected.insert(qwen3_expected.end(), qwen3_suffix.begin(), qwen3_suffix.end());
  EXPECT_EQ(cut, qwen3_expected);

  // The fixed parts alone over the limit: one variable token is kept.
  tokenizer.EncodeYesNoPair(mxbai, query, document, 5, &cut);
  EXPECT_EQ(cut.size(), fixed + 1);
}

// A part with only the instruction is left out when the instruction is empty.
TEST(YesNoTruncationTest, EmptyInstructionDropsItsPart) {
  const std::string folder = kData + "tiny-gemma-reranker";
  auto config = ReadModelConfig(folder + "/config.json");
  ASSERT_TRUE(config.ok());
  auto tokenizer = ModelTokenizer::Load(folder, *config);
  ASSERT_TRUE(tokenizer.ok());
  YesNoTemplate gemma = *FindYesNoPreset("bge-reranker-v2-gemma");
  std::vector<int32_t> with, without;
  (*tokenizer)->EncodeYesNoPair(gemma, "what is the capital of china?", "Beijing.", 0, &with);
  gemma.instruction = "";
  (*tokenizer)->EncodeYesNoPair(gemma, "what is the capital of china?", "Beijing.", 0, &without);
  const std::vector<int32_t> prompt =
      PartIds(**tokenizer, FindYesNoPreset("bge-reranker-v2-gemma")->instruction);
  ASSERT_FALSE(prompt.empty());
  ASSERT_EQ(with.size(), without.size() + prompt.size());
  EXPECT_TRUE(std::equal(without.begin(), without.end(), with.begin()));
}

}  // namespace
}  // namespace stamen::engine
