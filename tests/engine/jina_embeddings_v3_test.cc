// jina-embeddings-v3 (issue 48): each task adapter applied per sequence against transformers 5.25
// run on the weights with that task's adapter merged (tools/make_jina_v3_goldens.py states the
// rule and its source), per token and mean, cosine ≥ 0.9999 and ≤ 1e-4 in fp32; tasks mixed in one
// batch give each sequence its own task's outputs; what the configs read as; refusals (a task the
// model lacks, a folder handed to another reader).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/weight_store.h"
#include "model_folder/model_config.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

using testing::Cosine;
using testing::ReadText;
using testing::TempDir;
using testing::WriteFile;

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";
const std::string kHub = "tiny-jina-v3-hub-bf16";
constexpr int kSequences = 6;  // the goldens' lengths 1, 3, 7, 16, 64, 130
constexpr int64_t kHidden = 64;

// The golden name of adapter `adapter` (−1: none) of the hub folder's config.
std::string TaskName(const ModelConfig& config, int adapter) {
  return adapter < 0 ? "none" : config.adapter_tasks[adapter];
}

std::vector<int32_t> GoldenIds(const WeightStore& golden, int i) {
  auto ids = golden.Load("input_ids_" + std::to_string(i), DataType::kI64);
  EXPECT_TRUE(ids.ok());
  if (!ids.ok()) return {};
  return std::vector<int32_t>(ids->data<int64_t>(), ids->data<int64_t>() + ids->NumElements());
}

// The worst cosine (per row of `width`) and absolute error of `actual` against `expected`.
struct Agreement {
  double cosine = 1.0, error = 0.0;
  void Add(std::span<const float> actual, const Tensor& expected, int64_t width) {
    ASSERT_EQ(static_cast<int64_t>(actual.size()), expected.NumElements());
    const float* reference = expected.data<float>();
    for (size_t j = 0; j < actual.size(); ++j) error = std::max(error, double{std::abs(actual[j] - reference[j])});
    for (int64_t row = 0; row < expected.NumElements() / width; ++row) {
      cosine = std::min(cosine, Cosine(actual.subspan(row * width, width),
                                       {reference + row * width, static_cast<size_t>(width)}));
    }
  }
};

TEST(JinaEmbeddingsV3Test, ConfigsRead) {
  auto hub = ReadModelConfig(kData + kHub + "/config.json");
  ASSERT_TRUE(hub.ok()) << hub.status().message();
  EXPECT_EQ(hub->family, ModelFamily::kJinaEmbeddingsV3);
  EXPECT_EQ(hub->architecture, "XLMRobertaLoRA");  // auto_map's AutoModel, not "XLMRobertaModel"
  EXPECT_EQ(hub->adapter_tasks, (std::vector<std::string>{"retrieval.query", "retrieval.passage", "separation",
                                                          "classification", "text-matching"}));
  EXPECT_EQ(hub->adapter_prompts[0], "Represent the query for retrieving evidence documents: ");
  EXPECT_EQ(hub->adapter_prompts[1], "Represent the document for retrieval: ");
  EXPECT_EQ(hub->adapter_prompts[2], "");
  EXPECT_EQ(hub->lora_rank, 4);
  EXPECT_DOUBLE_EQ(hub->lora_alpha, 1.0);
  EXPECT_DOUBLE_EQ(hub->rope_theta, 20000.0);  // rotary_emb_base; the remote code's default is 10000
  EXPECT_DOUBLE_EQ(hub->norm_eps, 1e-5);
  EXPECT_EQ(hub->type_vocab_size, 1);
  EXPECT_EQ(AdapterIndex(*hub, "separation"), 2);
  EXPECT_EQ(AdapterIndex(*hub, "query"), -1);

  for (const std::string folder : {"tiny-jina-v3", "tiny-jina-v3-state-dict"}) {
    auto native = ReadModelConfig(kData + folder + "/config.json");
    ASSERT_TRUE(native.ok()) << native.status().message();
    EXPECT_EQ(native->family, ModelFamily::kJinaEmbeddingsV3);
    EXPECT_EQ(native->architecture, "JinaEmbeddingsV3Model");
    EXPECT_TRUE(native->adapter_tasks.empty());
    EXPECT_DOUBLE_EQ(native->rope_theta, 20000.0);
  }
}

// Every task of the hub folder (and none), one sequence per step, against its merged-weights golden.
TEST(JinaEmbeddingsV3Test, EachTaskMatchesTransformersOnMergedWeights) {
  for (const std::string& folder : {kHub, std::string("tiny-jina-v3"), std::string("tiny-jina-v3-state-dict")}) {
    auto engine = Engine::Load(kData + folder, {.num_threads = 1, .compute_dtype = DataType::kF32});
    ASSERT_TRUE(engine.ok()) << folder << ": " << engine.status().message();
    auto golden = WeightStore::OpenFile(kData + folder + "/golden.safetensors");
    ASSERT_TRUE(golden.ok()) << golden.status().message();
    const ModelConfig& config = (*engine)->config();
    const int tasks = static_cast<int>(config.adapter_tasks.size());
    for (int adapter = -1; adapter < tasks; ++adapter) {
      Agreement agreement;
      for (int i = 0; i < kSequences; ++i) {
        const std::vector<int32_t> ids = GoldenIds(*golden, i);
        const std::vector<int32_t> bounds = {0, static_cast<int32_t>(ids.size())};
        const std::vector<int32_t> adapters = {adapter};
        const std::string suffix = TaskName(config, adapter) + "_" + std::to_string(i);
        for (const auto& [name, options] :
             {std::pair<std::string, StepOptions>{"last_hidden_state_", {.output = StepOutput::kTokenEmbeddings}},
              std::pair<std::string, StepOptions>{"mean_pooled_",
                                                  {.pooling = ops::PoolingMode::kMean}}}) {
          auto result = (*engine)->Step({ids, bounds, {}, tasks > 0 ? adapters : std::vector<int32_t>{}}, options);
          ASSERT_TRUE(result.ok() && result->Wait().ok()) << folder << " " << suffix;
          auto expected = golden->Load(name + suffix);
          ASSERT_TRUE(expected.ok()) << name + suffix;
          agreement.Add({result->values().data<float>(), static_cast<size_t>(result->values().NumElements())},
                        *expected, kHidden);
        }
      }
      EXPECT_GE(agreement.cosine, 0.9999) << folder << " " << TaskName(config, adapter);
      EXPECT_LE(agreement.error, 1e-4) << folder << " " << TaskName(config, adapter);
      std::cout << "[ golden   ] " << folder << " task " << TaskName(config, adapter) << ": worst cosine "
                << std::setprecision(10) << agreement.cosine << ", max abs error " << std::setprecision(3)
                << agreement.error << " (per token, mean)\n";
    }
  }
}

// Tasks mixed in one batch: each sequence gets its own task's outputs, whatever its neighbours
// run with (runs of one task and single sequences alike).
TEST(JinaEmbeddingsV3Test, MixedTasksInOneBatchEqualEachTaskAlone) {
  auto engine = Engine::Load(kData + kHub, {.num_threads = 1, .compute_dtype = DataType::kF32});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto golden = WeightStore::OpenFile(kData + kHub + "/golden.safetensors");
  ASSERT_TRUE(golden.ok());
  const ModelConfig& config = (*engine)->config();
  for (const std::vector<int32_t>& adapters : {std::vector<int32_t>{0, 1, 2, 3, 4, -1},
                                               std::vector<int32_t>{4, 4, -1, 0, 0, 2},
                                               std::vector<int32_t>{-1, 3, 3, 3, 1, -1}}) {
    std::vector<int32_t> ids, bounds = {0};
    for (int i = 0; i < kSequences; ++i) {
      const std::vector<int32_t> sequence = GoldenIds(*golden, i);
      ids.insert(ids.end(), sequence.begin(), sequence.end());
      bounds.push_back(static_cast<int32_t>(ids.size()));
    }
    auto tokens = (*engine)->Step({ids, bounds, {}, adapters}, {.output = StepOutput::kTokenEmbeddings});
    ASSERT_TRUE(tokens.ok() && tokens->Wait().ok()) << tokens.status().message();
    auto pooled = (*engine)->Step({ids, bounds, {}, adapters}, {.pooling = ops::PoolingMode::kMean});
    ASSERT_TRUE(pooled.ok() && pooled->Wait().ok());
    Agreement agreement;
    for (int i = 0; i < kSequences; ++i) {
      const std::string suffix = TaskName(config, adapters[i]) + "_" + std::to_string(i);
      auto expected_tokens = golden->Load("last_hidden_state_" + suffix);
      auto expected_mean = golden->Load("mean_pooled_" + suffix);
      ASSERT_TRUE(expected_tokens.ok() && expected_mean.ok()) << suffix;
      const Tensor rows = tokens->SequenceRows(i);
      agreement.Add({rows.data<float>(), static_cast<size_t>(rows.NumElements())}, *expected_tokens, kHidden);
      agreement.Add(pooled->Row(i), *expected_mean, kHidden);
    }
    EXPECT_GE(agreement.cosine, 0.9999);
    EXPECT_LE(agreement.error, 1e-4);
  }
}

// bf16 products (weights and inputs rounded, sums in fp32) with adapters stay close to the
// fp32 reference: the adapters' own gemms run at the same precision.
TEST(JinaEmbeddingsV3Test, BFloat16WithAdaptersStaysClose) {
  auto engine = Engine::Load(kData + kHub, {.num_threads = 1, .compute_dtype = DataType::kBF16});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto golden = WeightStore::OpenFile(kData + kHub + "/golden.safetensors");
  ASSERT_TRUE(golden.ok());
  double worst = 1.0;
  for (int adapter = -1; adapter < 5; ++adapter) {
    for (int i = 0; i < kSequences; ++i) {
      const std::vector<int32_t> ids = GoldenIds(*golden, i);
      const std::vector<int32_t> bounds = {0, static_cast<int32_t>(ids.size())};
      const std::vector<int32_t> adapters = {adapter};
      auto result = (*engine)->Step({ids, bounds, {}, adapters}, {.pooling = ops::PoolingMode::kMean});
      ASSERT_TRUE(result.ok() && result->Wait().ok());
      auto expected = golden->Load("mean_pooled_" + TaskName((*engine)->config(), adapter) + "_" + std::to_string(i));
      ASSERT_TRUE(expected.ok());
      worst = std::min(worst, Cosine(result->Row(0), {expected->data<float>(), static_cast<size_t>(kHidden)}));
    }
  }
  EXPECT_GE(worst, 0.999);
  std::cout << "[ bf16     ] " << kHub << ": worst mean cosine " << std::setprecision(6) << worst << "\n";
}

TEST(JinaEmbeddingsV3Test, BadAdaptersAreRefused) {
  auto hub = Engine::Load(kData + kHub, {.num_threads = 1});
  ASSERT_TRUE(hub.ok()) << hub.status().message();
  const std::vector<int32_t> ids = {0, 5, 2}, bounds = {0, 3};
  const std::vector<int32_t> outside = {5}, two = {0, 1};
  auto beyond = (*hub)->Step({ids, bounds, {}, outside}, {.pooling = ops::PoolingMode::kMean});
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.status().message().find("'text-matching'"), std::string::npos) << beyond.status().message();
  auto mismatched = (*hub)->Step({ids, bounds, {}, two}, {.pooling = ops::PoolingMode::kMean});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("2 entries for 1 sequences"), std::string::npos);

  auto native = Engine::Load(kData + "tiny-jina-v3", {.num_threads = 1});
  ASSERT_TRUE(native.ok()) << native.status().message();
  const std::vector<int32_t> first = {0}, none = {-1};
  auto refused = (*native)->Step({ids, bounds, {}, first}, {.pooling = ops::PoolingMode::kMean});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("has no task adapters"), std::string::npos) << refused.status().message();
  EXPECT_TRUE((*native)->Step({ids, bounds, {}, none}, {.pooling = ops::PoolingMode::kMean}).ok());
}

// The folder's config.json with `from` replaced by `to` (and its weights) in `dir`.
void WriteEdited(const std::string& folder, const std::string& from, const std::string& to, TempDir& dir) {
  std::string json = ReadText(kData + folder + "/config.json");
  const size_t at = json.find(from);
  ASSERT_NE(at, std::string::npos) << folder << " has no " << from;
  json.replace(at, from.size(), to);
  WriteFile(dir.File("config.json"), json);
  std::filesystem::copy_file(kData + folder + "/model.safetensors", dir.File("model.safetensors"));
}

std::string LoadError(const std::string& folder, const std::string& from, const std::string& to) {
  TempDir dir;
  WriteEdited(folder, from, to, dir);
  auto engine = Engine::Load(dir.path(), {.num_threads = 1});
  return engine.ok() ? "" : engine.status().message();
}

// No folder is misloaded: the hub folder without its XLMRobertaLoRA class is refused by the
// RoBERTa reader (the remote config class, or rotary positions), transformers' own folder handed
// to RoBERTa lacks its position table, other families' folders handed to this reader lack its
// tensors, and a remote class stamen does not implement is refused by name.
TEST(JinaEmbeddingsV3Test, FoldersRefusedByWrongReaders) {
  const std::string other_class = LoadError(kHub, "modeling_lora.XLMRobertaLoRA", "modeling_xlm_roberta.XLMRobertaModel");
  EXPECT_NE(other_class.find("'XLMRobertaFlashConfig'"), std::string::npos) << other_class;
  EXPECT_NE(other_class.find("does not implement"), std::string::npos) << other_class;
  const std::string as_bert = LoadError(kHub, "\"XLMRobertaModel\"", "\"BertModel\"");
  EXPECT_NE(as_bert.find("'XLMRobertaFlashConfig'"), std::string::npos) << as_bert;
  const std::string no_auto_map = LoadError(kHub, "\"auto_map\"", "\"no_auto_map\"");
  EXPECT_NE(no_auto_map.find("rotary"), std::string::npos) << no_auto_map;
  const std::string as_roberta = LoadError("tiny-jina-v3", "\"JinaEmbeddingsV3Model\"", "\"XLMRobertaModel\"");
  EXPECT_NE(as_roberta.find("position_embeddings"), std::string::npos) << as_roberta;
  const std::string gte_as_jina = LoadError("tiny-gte", "\"GteModel\"", "\"JinaEmbeddingsV3Model\"");
  EXPECT_NE(gte_as_jina.find("missing tensor"), std::string::npos) << gte_as_jina;
  const std::string nomic_as_jina = LoadError("tiny-nomic-bert", "\"NomicBertModel\"", "\"JinaEmbeddingsV3Model\"");
  EXPECT_NE(nomic_as_jina.find("missing tensor"), std::string::npos) << nomic_as_jina;
  // Adapters named by the config but transformers' names without them in the file.
  TempDir dir;
  std::string json = ReadText(kData + kHub + "/config.json");
  WriteFile(dir.File("config.json"), json);
  std::filesystem::copy_file(kData + "tiny-jina-v3-state-dict/model.safetensors", dir.File("model.safetensors"));
  auto mixed = Engine::Load(dir.path(), {.num_threads = 1});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("lora_adaptations"), std::string::npos) << mixed.status().message();
}

// jina-colbert-v2 (tiny-colbert-jina, whose vectors multi_vector_test compares with PyLate):
// Stanford ColBERT's HF_ColBERT with jina's remote config in its auto_map runs as
// ColBERTJinaRobertaModel, on the remote code's tensor names and without adapters. Without that
// auto_map the BERT reader refuses its rotary positions; a model class stamen does not implement
// beside that config is refused by name; a config naming vLLM's class for it (its
// --hf-overrides) loads alike.
TEST(JinaEmbeddingsV3Test, JinaColbertRunsOnItsOwnBackboneNeverAsBert) {
  auto config = ReadModelConfig(kData + "tiny-colbert-jina/config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->architecture, kJinaColbertArchitecture);
  EXPECT_EQ(config->family, ModelFamily::kJinaEmbeddingsV3);
  EXPECT_TRUE(config->remote_code_tensors);
  EXPECT_TRUE(config->adapter_tasks.empty());
  const std::string no_auto_map = LoadError("tiny-colbert-jina", "\"auto_map\"", "\"no_auto_map\"");
  EXPECT_NE(no_auto_map.find("rotary"), std::string::npos) << no_auto_map;
  const std::string other_class = LoadError("tiny-colbert-jina", "modeling_xlm_roberta.XLMRobertaModel",
                                            "modeling_xlm_roberta.XLMRobertaForColbert");
  EXPECT_NE(other_class.find("'XLMRobertaForColbert'"), std::string::npos) << other_class;
  EXPECT_EQ(LoadError("tiny-colbert-jina", "\"HF_ColBERT\"", "\"ColBERTJinaRobertaModel\""), "");
}

}  // namespace
}  // namespace stamen::engine
