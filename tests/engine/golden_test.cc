// The engine against Hugging Face transformers: every model in ../shared/models/golden, each
// reference output within 1e-4 absolute, for each sequence alone and for all six packed into
// one ragged batch. Then the engine's error paths on broken model folders and bad batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "engine/engine.h"
#include "engine/finish_rows.h"
#include "model_folder/model_tokenizer.h"
#include "engine/weight_store.h"
#include "model_folder/yes_no_reranker.h"
#include "engine/cpu/cpu_path.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

using testing::Cosine;
using testing::SafetensorsBuilder;
using testing::TempDir;
using testing::WriteFile;

const std::string kGolden = std::string(STAMEN_SHARED_DIR) + "/models/golden/";
// Goldens this project made (tools/make_qwen3_golden.py), in the same layout.
const std::string kLocalGolden = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

std::string GoldenFolder(const std::string& model) {
  return std::filesystem::exists(kGolden + model) ? kGolden + model : kLocalGolden + model;
}
constexpr int kSequences = 6;
constexpr double kTolerance = 1e-4;

struct Golden {
  std::vector<std::vector<int32_t>> ids;
  WeightStore store;
};

StatusOr<Golden> LoadGolden(const std::string& model) {
  auto store = WeightStore::OpenFile(GoldenFolder(model) + "/golden.safetensors");
  if (!store.ok()) return store.status();
  Golden golden{{}, std::move(store.value())};
  for (int i = 0; i < kSequences; ++i) {
    auto ids = golden.store.Load("input_ids_" + std::to_string(i), DataType::kI64);
    if (!ids.ok()) return ids.status();
    golden.ids.emplace_back(ids->data<int64_t>(), ids->data<int64_t>() + ids->NumElements());
  }
  return golden;
}

// The largest |a - b| over the reference tensor `name` and `actual` (rows of a result).
double MaxAbsError(const Golden& golden, const std::string& name, std::span<const float> actual) {
  auto expected = golden.store.Load(name);
  EXPECT_TRUE(expected.ok()) << expected.status().message();
  if (!expected.ok()) return INFINITY;
  EXPECT_EQ(static_cast<size_t>(expected->NumElements()), actual.size()) << name;
  if (static_cast<size_t>(expected->NumElements()) != actual.size()) return INFINITY;
  double worst = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    worst = std::max(worst, std::abs(double{actual[i]} - expected->data<float>()[i]));
  }
  return worst;
}

// Sequence `ids` alone through `engine`, its result waited for.
StatusOr<LazyResult> StepAlone(Engine& engine, const std::vector<int32_t>& ids, const StepOptions& options) {
  const std::vector<int32_t> bounds = {0, static_cast<int32_t>(ids.size())};
  auto result = engine.Step({ids, bounds, {}}, options);
  if (result.ok()) STAMEN_RETURN_IF_ERROR(result->Wait());
  return result;
}

// One output kind of the golden file and how the engine produces it.
struct Output {
  std::string prefix;  // golden tensor name without "_i"
  StepOptions options;
};

class GoldenTest : public ::testing::TestWithParam<std::string> {};

// A test's name from its model folder's ("tiny-bert" → "tiny_bert").
std::string FolderTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

TEST_P(GoldenTest, MatchesTransformersAloneAndPacked) {
  const std::string model = GetParam();
  // One thread: these models are tiny, and a parallel region costs more than their gemms.
  auto engine = Engine::Load(GoldenFolder(model), {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto golden = LoadGolden(model);
  ASSERT_TRUE(golden.ok()) << golden.status().message();

  std::vector<Output> outputs = {
      {"last_hidden_state", {.output = StepOutput::kTokenEmbeddings}},
      {"mean_pooled", {.pooling = ops::PoolingMode::kMean}},
      {"cls_pooled", {.pooling = ops::PoolingMode::kCls}},
  };
  if (golden->store.Contains("logits_0")) outputs.push_back({"logits", {.output = StepOutput::kScores}});
  if (golden->store.Contains("weightedmean_pooled_0")) {
    outputs.push_back({"weightedmean_pooled", {.pooling = ops::PoolingMode::kWeightedMean}});
    outputs.push_back({"mean_sqrt_len_pooled", {.pooling = ops::PoolingMode::kMeanSqrtLen}});
  }
  // SPLADE: the masked-LM head's logits, max-pooled after log(1 + relu).
  if (golden->store.Contains("splade_0")) outputs.push_back({"splade", {.pooling = ops::PoolingMode::kSplade}});
  if (golden->store.Contains("last_token_0")) {
    outputs.push_back({"last_token", {.pooling = ops::PoolingMode::kLastToken}});
  }

  std::vector<int32_t> packed_ids;
  std::vector<int32_t> packed_bounds = {0};
  for (const auto& ids : golden->ids) {
    packed_ids.insert(packed_ids.end(), ids.begin(), ids.end());
    packed_bounds.push_back(static_cast<int32_t>(packed_ids.size()));
  }
  for (const Output& output : outputs) {
    double worst_alone = 0.0;
    for (int i = 0; i < kSequences; ++i) {
      auto result = StepAlone(**engine, golden->ids[i], output.options);
      ASSERT_TRUE(result.ok()) << result.status().message();
      const Tensor& values = result->values();
      const double error = MaxAbsError(*golden, output.prefix + "_" + std::to_string(i),
                                       {values.data<float>(), static_cast<size_t>(values.NumElements())});
      EXPECT_LE(error, kTolerance) << model << " " << output.prefix << "_" << i << " alone";
      worst_alone = std::max(worst_alone, error);
    }
    auto packed = (*engine)->Step({packed_ids, packed_bounds, {}}, output.options);
    ASSERT_TRUE(packed.ok()) << packed.status().message();
    ASSERT_TRUE(packed->Wait().ok());
    double worst_packed = 0.0;
    const bool per_token = output.options.output == StepOutput::kTokenEmbeddings;
    for (int i = 0; i < kSequences; ++i) {
      const Tensor rows = per_token ? packed->values().Rows(packed_bounds[i], packed_bounds[i + 1])
                                    : packed->values().Rows(i, i + 1);
      const double error = MaxAbsError(*golden, output.prefix + "_" + std::to_string(i),
                                       {rows.data<float>(), static_cast<size_t>(rows.NumElements())});
      EXPECT_LE(error, kTolerance) << model << " " << output.prefix << "_" << i << " packed";
      worst_packed = std::max(worst_packed, error);
    }
    std::cout << "[ golden   ] " << model << " " << output.prefix << ": max abs error alone " << worst_alone
              << ", packed " << worst_packed << "\n";
  }
}

// Every golden folder, for the suites below.
const auto kGoldenModels = ::testing::Values("tiny-bert", "tiny-xlm-roberta", "tiny-xlm-roberta-reranker", "tiny-qwen2",
                      "tiny-qwen3", "tiny-roberta-classifier", "tiny-camembert", "tiny-distilbert",
                      "tiny-distilbert-classifier", "tiny-mpnet", "tiny-mpnet-masked-lm",
                      "tiny-mpnet-masked-lm-prefixed", "tiny-mpnet-classifier", "tiny-llama",
                      "tiny-mistral", "tiny-modernbert", "tiny-modernbert-classifier",
                      "tiny-modernbert-biased-mean-classifier", "tiny-gemma3", "tiny-qwen3-classifier",
                      "tiny-qwen3-classifier-3", "tiny-qwen2-classifier", "tiny-qwen3-reranker",
                      "tiny-qwen3-reranker-tied", "tiny-deberta-v3", "tiny-deberta-v3-reranker",
                      "tiny-deberta-v2", "tiny-deberta-v2-c2p-classifier", "tiny-bert-classifier",
                      "tiny-bert-splade", "tiny-roberta-splade", "tiny-distilbert-splade", "tiny-modernbert-bf16",
                      "tiny-qwen3-f16", "tiny-gemma3-bf16",
                      // Issue 48: bidirectional Llama / Qwen3 encoders (tiny-pplx-embed, whose pooled
                      // vectors are its int8 ones: bidirectional_encoders_test.cc).
                      "tiny-eurobert", "tiny-eurobert-bf16", "tiny-llama-bidirectional",
                      // llama-nemotron-rerank: the same backbone, its mean through `score`.
                      "tiny-llama-bidirectional-reranker",
                      // voyage-4-nano's Qwen3BidirectionalModel: every pooled vector through its `linear`.
                      "tiny-voyage-qwen3-bidirectional",
                      // EuroBertForSequenceClassification, one folder per classifier_pooling.
                      "tiny-eurobert-reranker-late", "tiny-eurobert-reranker-bos-bf16",
                      "tiny-eurobert-classifier-mean",
                      // Issue 48: rotary post-norm encoders, transformers' layout and the hub's.
                      "tiny-nomic-bert", "tiny-nomic-bert-hub-bf16", "tiny-gte", "tiny-gte-hub-ntk-f16",
                      "tiny-gte-reranker", "tiny-gte-reranker-hub",
                      // NomicBERT's partial rotary (hub) and dynamic NTK scaling (hub, BF16 stored; native).
                      "tiny-nomic-bert-partial-rotary-hub", "tiny-nomic-bert-dynamic-ntk-hub-bf16",
                      "tiny-nomic-bert-dynamic-ntk",
                      // nomic-embed-text-v2-moe's experts (hub layout): nomic's modules in transformers' model.
                      "tiny-nomic-bert-moe-hub",
                      // Issue 48: JinaBERT (ALiBi), the hub's layout; the reference is a re-implementation,
                      // of jina-embeddings-v2-base-code's qk-post-norm layers too (tiny-jina-bert-code).
                      "tiny-jina-bert", "tiny-jina-reranker-bf16", "tiny-jina-bert-code",
                      // Issue 44: LLM rerankers on Qwen2 (mxbai-rerank-v2), Gemma (bge-reranker-v2-gemma)
                      // and Gemma 2 (soft-capped attention and logits, sliding layers), F32 and BF16 stored.
                      "tiny-qwen2-mxbai-reranker", "tiny-gemma-reranker", "tiny-gemma2-reranker",
                      "tiny-gemma2-reranker-bf16");

INSTANTIATE_TEST_SUITE_P(Models, GoldenTest, kGoldenModels, FolderTestName);

// --dtype bfloat16 on the CPU: every family's outputs stay within bf16's accuracy of
// transformers' fp32 ones. Each sequence's last hidden state (all its tokens as one vector)
// and its mean-pooled vector have cosine ≥ 0.999 to the reference (the published 0.1% gate),
// and logits are within 2% of the largest logit of the golden set. This checks that bf16 reaches every matrix
// product of every family and nothing else breaks; the real-weight gate over 1,000+ texts is
// bench/dtype_gate.sh.
class BFloat16GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BFloat16GoldenTest, StaysWithinTheAccuracyGateOfTransformers) {
  const std::string model = GetParam();
  if (model == "tiny-nomic-bert-moe-hub") {
    // A mixture of experts routes each token by a discrete top-k: in this random model tokens 1
    // and 4 of the 7-token golden have their 2nd and 3rd router probabilities in layer 3 0.0014
    // and 0.0053 apart, and bf16's rounding in the layers before the router swaps them: those two
    // tokens alone move (cosine 0.981 and 0.988, the others ≥ 0.99998; the router's own product
    // runs in fp32). Its fp32 goldens hold.
    GTEST_SKIP() << model << ": expert routing flips on a near tie in bf16";
  }
  auto engine = Engine::Load(GoldenFolder(model), {.num_threads = 1, .compute_dtype = DataType::kBF16});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ((*engine)->compute_dtype(), "bfloat16");
  auto golden = LoadGolden(model);
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  std::vector<Output> outputs = {
      {"last_hidden_state", {.output = StepOutput::kTokenEmbeddings}},
      {"mean_pooled", {.pooling = ops::PoolingMode::kMean}},
  };
  const bool has_logits = golden->store.Contains("logits_0");
  if (has_logits) outputs.push_back({"logits", {.output = StepOutput::kScores}});
  double worst_cosine = 1.0, worst_logit = 0.0;
  std::vector<float> logits, reference_logits;  // of every sequence
  for (const Output& output : outputs) {
    for (int i = 0; i < kSequences; ++i) {
      auto result = StepAlone(**engine, golden->ids[i], output.options);
      ASSERT_TRUE(result.ok()) << result.status().message();
      const Tensor& values = result->values();
      const std::span<const float> actual(values.data<float>(), static_cast<size_t>(values.NumElements()));
      auto expected = golden->store.Load(output.prefix + "_" + std::to_string(i));
      ASSERT_TRUE(expected.ok()) << expected.status().message();
      ASSERT_EQ(static_cast<size_t>(expected->NumElements()), actual.size());
      const std::span<const float> reference(expected->data<float>(), actual.size());
      if (output.prefix == "logits") {
        logits.insert(logits.end(), actual.begin(), actual.end());
        reference_logits.insert(reference_logits.end(), reference.begin(), reference.end());
        continue;
      }
      const double cosine = Cosine(actual, reference);
      EXPECT_GE(cosine, 0.999) << model << " " << output.prefix << "_" << i;
      worst_cosine = std::min(worst_cosine, cosine);
    }
  }
  // A random tiny head gives some logits near zero, so each error is measured against the
  // largest logit of all the sequences, the scale the head's products have.
  float largest = 1e-3f;
  for (float logit : reference_logits) largest = std::max(largest, std::abs(logit));
  // A late-pooled head averages every token's logits, which mostly cancel in a random tiny model:
  // the mean is far smaller than the products it is made of. transformers' own bf16 run of
  // tiny-eurobert-reranker-late is 4.6% of its largest logit off its fp32 goldens (the engine's, 2.7%).
  const double gate = model == "tiny-eurobert-reranker-late" ? 0.05 : 0.02;
  for (size_t j = 0; j < logits.size(); ++j) {
    const double relative = std::abs(logits[j] - reference_logits[j]) / largest;
    EXPECT_LE(relative, gate) << model << " logit " << j << ": " << logits[j] << " against " << reference_logits[j];
    worst_logit = std::max(worst_logit, relative);
  }
  std::cout << "[ bf16     ] " << model << ": worst cosine " << worst_cosine;
  if (has_logits) std::cout << ", worst logit error " << 100 * worst_logit << "% of the largest";
  std::cout << "\n";
}

INSTANTIATE_TEST_SUITE_P(Models, BFloat16GoldenTest, kGoldenModels, FolderTestName);

// Without --dtype, an engine computes in fp32 unless this CPU multiplies bf16 faster and the
// family passed the gate; a dtype the CPU engine does not compute in is refused.
TEST(EngineTest, ComputeTypeDefaultsAndChoices) {
  auto bert = Engine::Load(kGolden + "tiny-bert");
  ASSERT_TRUE(bert.ok()) << bert.status().message();
  EXPECT_EQ((*bert)->compute_dtype(),
            DefaultComputeType((*bert)->config(), Device::kCpu) == DataType::kBF16 ? "bfloat16" : "float32");
  // The CPU's rule, which STAMEN_CPU_DTYPE (set by scripts/test.sh) replaces.
  const char* pinned = std::getenv("STAMEN_CPU_DTYPE");
  const std::string saved = pinned == nullptr ? "" : pinned;
  unsetenv("STAMEN_CPU_DTYPE");
  EXPECT_EQ(DefaultComputeType((*bert)->config(), Device::kCpu),
            cpu::DefaultsToBFloat16() ? DataType::kBF16 : DataType::kF32);
  setenv("STAMEN_CPU_DTYPE", "bfloat16", 1);
  EXPECT_EQ(DefaultComputeType((*bert)->config(), Device::kCpu), DataType::kBF16);
  if (pinned != nullptr) {
    setenv("STAMEN_CPU_DTYPE", saved.c_str(), 1);
  } else {
    unsetenv("STAMEN_CPU_DTYPE");
  }
  auto qwen = Engine::Load(kGolden + "tiny-qwen2");
  ASSERT_TRUE(qwen.ok()) << qwen.status().message();
  if (std::getenv("STAMEN_CPU_DTYPE") == nullptr) {
    EXPECT_EQ((*qwen)->compute_dtype(), "float32") << "no bf16 gate was measured for Qwen2";
  }
  auto chosen = Engine::Load(kGolden + "tiny-bert", {.compute_dtype = DataType::kF32});
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ((*chosen)->compute_dtype(), "float32");
  auto half = Engine::Load(kGolden + "tiny-bert", {.compute_dtype = DataType::kF16});
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("float32 or bfloat16"), std::string::npos) << half.status().message();
  EXPECT_EQ(ParseComputeType("bfloat16"), DataType::kBF16);
  EXPECT_EQ(ParseComputeType("float32"), DataType::kF32);
  EXPECT_EQ(ParseComputeType("float16"), std::nullopt);
}

// Late chunking: spans pooled from one forward pass equal pooling transformers' last hidden
// state over the same tokens (float64 reference, cast to F32), within 1e-5. Two sequences in
// one batch, spans overlapping, of one token, and of a whole sequence.
class SpanPoolingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpanPoolingTest, SpansPoolTransformersHiddenStatesOfOneForwardPass) {
  const std::string model = GetParam();
  auto engine = Engine::Load(GoldenFolder(model), {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto golden = LoadGolden(model);
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  const std::vector<int32_t>& first = golden->ids[4];   // 64 tokens
  const std::vector<int32_t>& second = golden->ids[5];  // 130 tokens
  std::vector<int32_t> ids = first;
  ids.insert(ids.end(), second.begin(), second.end());
  const int32_t start = static_cast<int32_t>(first.size());
  const std::vector<int32_t> bounds = {0, start, static_cast<int32_t>(ids.size())};
  // (sequence, begin, end) within the sequence.
  const std::vector<std::array<int32_t, 3>> spans = {{0, 3, 10}, {1, 1, 40}, {1, 30, 129}, {1, 64, 65}, {1, 0, 130}};
  std::vector<int32_t> batch_spans;
  for (const auto& [sequence, begin, end] : spans) {
    batch_spans.push_back(bounds[sequence] + begin);
    batch_spans.push_back(bounds[sequence] + end);
  }
  for (const ops::PoolingMode pooling : {ops::PoolingMode::kMean, ops::PoolingMode::kCls}) {
    auto result = (*engine)->Step({ids, bounds, {}}, {.pooling = pooling, .spans = batch_spans});
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_TRUE(result->Wait().ok());
    ASSERT_EQ(result->values().dim(0), static_cast<int64_t>(spans.size()));
    double worst = 0.0;
    for (size_t k = 0; k < spans.size(); ++k) {
      const auto [sequence, begin, end] = spans[k];
      auto hidden = golden->store.Load("last_hidden_state_" + std::to_string(sequence == 0 ? 4 : 5));
      ASSERT_TRUE(hidden.ok()) << hidden.status().message();
      const int64_t width = hidden->dim(1);
      const std::span<const float> row = result->Row(static_cast<int64_t>(k));
      ASSERT_EQ(static_cast<int64_t>(row.size()), width);
      for (int64_t column = 0; column < width; ++column) {
        double expected = 0.0;
        if (pooling == ops::PoolingMode::kCls) {
          expected = hidden->data<float>()[begin * width + column];
        } else {
          for (int32_t token = begin; token < end; ++token) expected += hidden->data<float>()[token * width + column];
          expected /= end - begin;
        }
        worst = std::max(worst, std::abs(expected - row[column]));
      }
    }
    EXPECT_LE(worst, 1e-5) << model << " " << ops::PoolingModeName(pooling);
    std::cout << "[ spans    ] " << model << " " << ops::PoolingModeName(pooling) << ": max abs error " << worst << "\n";
  }
  // A span must lie within one sequence and not be empty.
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{60, 70}, {5, 5}, {-1, 3}, {1}}) {
    auto result = (*engine)->Step({ids, bounds, {}}, {.pooling = ops::PoolingMode::kMean, .spans = bad});
    EXPECT_FALSE(result.ok()) << model;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SpanPoolingTest,
                         ::testing::Values("tiny-bert", "tiny-mpnet", "tiny-modernbert", "tiny-gemma3", "tiny-qwen3"),
                         FolderTestName);

// A copy of a golden model folder whose files a test may replace.
std::string CopyModel(const TempDir& dir, const std::string& model) {
  std::filesystem::copy(kGolden + model, dir.path(), std::filesystem::copy_options::recursive);
  return dir.path();
}

std::string ReadBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

// sentence-transformers Dense modules after pooling: tiny-gemma3 with mean pooling, Dense
// 64→5 (bias, Tanh), Dense 5→3 (no bias, Identity) and Normalize, against the same
// computation in double on the engine's own pooled vectors.
// A *ForCausalLM folder without sentence-transformers modules is a yes/no reranker: its raw
// score is transformers' full-vocabulary logit_yes − logit_no at the last position (Qwen3,
// mxbai's Qwen2) or logit_yes alone (Gemma; Gemma 2's soft-capped), its sigmoid the normalized score, and the
// family's default template is what EncodeYesNoPair builds: the Qwen3-Reranker card's (prefix
// ids + body ids + suffix ids, by HF tokenizers), mxbai-rerank's own prepare_inputs, the
// bge-reranker-v2-gemma card's get_inputs (tools/make_family_goldens.py), with and without an
// instruction.
class YesNoRerankerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(YesNoRerankerTest, YesProbabilityAndTemplateMatchTransformers) {
  const std::string folder = GoldenFolder(GetParam());
  auto engine = Engine::Load(folder, {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const ModelConfig& config = (*engine)->config();
  ASSERT_EQ(config.head, ModelHead::kSequenceClassification);
  ASSERT_FALSE(config.yes_no_token_ids.empty());
  auto golden = LoadGolden(GetParam());
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  const StepOptions scores{.output = StepOutput::kScores};
  double worst = 0.0;
  for (int i = 0; i < kSequences; ++i) {
    const std::vector<int32_t> bounds = {0, static_cast<int32_t>(golden->ids[i].size())};
    auto result = (*engine)->Step({golden->ids[i], bounds, {}}, scores);
    ASSERT_TRUE(result.ok() && result->Wait().ok());
    const float yes = 1.0f / (1.0f + std::exp(-result->values().data<float>()[0]));
    worst = std::max(worst, MaxAbsError(*golden, "yes_probability_" + std::to_string(i), {&yes, 1}));
  }
  EXPECT_LE(worst, kTolerance);

  auto tokenizer = ModelTokenizer::Load(folder, config);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  auto prompt = ReadYesNoTemplate(folder, config.family);
  ASSERT_TRUE(prompt.ok());
  const std::pair<std::string, std::string> pairs[] = {
      {"what is the capital of china?", "The capital of China is Beijing."},
      {"what is the capital of china?", "Gravity is a force that attracts two bodies towards each other."},
      {"explain gravity", "Gravity is a force that attracts two bodies towards each other."},
      {"yes or no", "no"}};
  std::vector<int32_t> ids;
  std::vector<int32_t> packed_ids, packed_bounds = {0};
  double worst_pair = 0.0;
  for (size_t k = 0; k < std::size(pairs); ++k) {
    (*tokenizer)->EncodeYesNoPair(*prompt, pairs[k].first, pairs[k].second, 0, &ids);
    packed_ids.insert(packed_ids.end(), ids.begin(), ids.end());
    packed_bounds.push_back(static_cast<int32_t>(packed_ids.size()));
    auto expected = golden->store.Load("pair_ids_" + std::to_string(k), DataType::kI64);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(std::vector<int32_t>(expected->data<int64_t>(), expected->data<int64_t>() + expected->NumElements()), ids)
        << "pair " << k;
    const std::vector<int32_t> bounds = {0, static_cast<int32_t>(ids.size())};
    auto result = (*engine)->Step({ids, bounds, {}}, scores);
    ASSERT_TRUE(result.ok() && result->Wait().ok());
    const float raw = result->values().data<float>()[0];
    const float yes = 1.0f / (1.0f + std::exp(-raw));
    worst_pair = std::max(worst_pair, MaxAbsError(*golden, "pair_logits_" + std::to_string(k), {&raw, 1}));
    worst_pair = std::max(worst_pair, MaxAbsError(*golden, "pair_yes_probability_" + std::to_string(k), {&yes, 1}));
  }
  EXPECT_LE(worst_pair, kTolerance);
  // The pairs, of different lengths, in one step: each raw score as alone.
  auto packed = (*engine)->Step({packed_ids, packed_bounds, {}}, scores);
  ASSERT_TRUE(packed.ok() && packed->Wait().ok());
  for (size_t k = 0; k < std::size(pairs); ++k) {
    const float raw = packed->values().data<float>()[k];
    EXPECT_LE(MaxAbsError(*golden, "pair_logits_" + std::to_string(k), {&raw, 1}), kTolerance) << "pair " << k << " packed";
  }
  if (golden->store.Contains("instruction_pair_ids")) {
    YesNoTemplate instructed = *prompt;
    instructed.instruction = "Find the passage that answers the question";
    (*tokenizer)->EncodeYesNoPair(instructed, pairs[0].first, pairs[0].second, 0, &ids);
    auto expected = golden->store.Load("instruction_pair_ids", DataType::kI64);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(std::vector<int32_t>(expected->data<int64_t>(), expected->data<int64_t>() + expected->NumElements()), ids);
    // The template object is reused with the default instruction: the cached fixed parts follow.
    (*tokenizer)->EncodeYesNoPair(*prompt, pairs[0].first, pairs[0].second, 0, &ids);
    auto first = golden->store.Load("pair_ids_0", DataType::kI64);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(std::vector<int32_t>(first->data<int64_t>(), first->data<int64_t>() + first->NumElements()), ids);
  }
  std::cout << "[ golden   ] " << GetParam() << " yes probability: max abs error " << worst << ", templated pairs "
            << worst_pair << "\n";

  // Chosen off, the same folder is an embedder (no head).
  auto embedder = Engine::Load(folder, {.yes_no_reranker = false, .num_threads = 1});
  ASSERT_TRUE(embedder.ok());
  EXPECT_EQ((*embedder)->config().head, ModelHead::kNone);
}

INSTANTIATE_TEST_SUITE_P(Models, YesNoRerankerTest,
                         ::testing::Values("tiny-qwen3-reranker", "tiny-qwen3-reranker-tied", "tiny-qwen2-mxbai-reranker",
                                           "tiny-gemma-reranker", "tiny-gemma2-reranker", "tiny-gemma2-reranker-bf16"),
                         FolderTestName);

// Gemma 2 soft-caps its attention scores, which the CUDA attention kernels do not do: the CUDA
// engine refuses such a folder by name before it starts a device (a build without CUDA says the
// same), where running it would give other scores.
// Soft-capped attention is no reason to refuse CUDA any more (both attention kernels cap the
// scores; tests/cuda checks the model against this CPU engine where a GPU is): a load fails only
// for want of a GPU or of the CUDA build.
TEST(YesNoRerankerTest, CudaTakesSoftCappedAttention) {
  auto engine = Engine::Load(GoldenFolder("tiny-gemma2-reranker"), {.device = Device::kCuda});
  if (engine.ok()) return;  // a GPU is here
  EXPECT_EQ(engine.status().message().find("attn_logit_softcapping"), std::string::npos) << engine.status().message();
  EXPECT_EQ(engine.status().message().find("soft-cap"), std::string::npos) << engine.status().message();
}

// bge-reranker-v2.5-gemma2-lightweight's CostWiseGemmaForCausalLM (tiny-gemma2-costwise-reranker:
// 4 layers, heads for layers 2, 3, 4): its raw score after each cut-off layer against FlagEmbedding's
// own classes (tools/make_family_goldens.py make_costwise: the model's forward on random ids, and
// LightweightLLMReranker.compute_score on the templated pairs, whose ids it built), each sequence
// alone and the pairs packed in one step. The cut-off is the default (every layer) or the one the
// folder's yes_no_reranker.json names.
class LayerWiseRerankerTest : public ::testing::TestWithParam<int> {
 protected:
  static constexpr std::string_view kModel = "tiny-gemma2-costwise-reranker";
  static constexpr std::pair<std::string_view, std::string_view> kPairs[] = {
      {"what is the capital of china?", "The capital of China is Beijing."},
      {"what is the capital of china?", "Gravity is a force that attracts two bodies towards each other."},
      {"explain gravity", "Gravity is a force that attracts two bodies towards each other."},
      {"yes or no", "no"}};

  // The golden folder, copied with a yes_no_reranker.json of `json` (none when empty).
  std::string FolderWith(const std::string& json) {
    const std::string folder = dir_.path() + "/model";
    std::filesystem::copy(GoldenFolder(std::string(kModel)), folder, std::filesystem::copy_options::recursive);
    if (!json.empty()) WriteFile(folder + "/yes_no_reranker.json", json);
    return folder;
  }

  TempDir dir_;
};

TEST_P(LayerWiseRerankerTest, ScoresMatchFlagEmbeddingAtTheCutoff) {
  const int layer = GetParam();
  // Layer 4, the last, is the default: no file.
  const std::string folder = FolderWith(layer == 4 ? "" : R"({"cutoff_layer": )" + std::to_string(layer) + "}");
  auto engine = Engine::Load(folder, {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const ModelConfig& config = (*engine)->config();
  ASSERT_EQ(config.head, ModelHead::kSequenceClassification);
  EXPECT_EQ(config.cutoff_layer, layer);
  EXPECT_TRUE(config.yes_no_reranker());
  auto golden = LoadGolden(std::string(kModel));
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  const std::string suffix = "layer" + std::to_string(layer) + "_";
  const StepOptions scores{.output = StepOutput::kScores};
  double worst = 0.0;
  for (int i = 0; i < kSequences; ++i) {
    auto result = StepAlone(**engine, golden->ids[i], scores);
    ASSERT_TRUE(result.ok()) << result.status().message();
    worst = std::max(worst, MaxAbsError(*golden, "logits_" + suffix + std::to_string(i),
                                        {result->values().data<float>(), 1}));
  }
  EXPECT_LE(worst, kTolerance);

  auto tokenizer = ModelTokenizer::Load(folder, config);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  auto prompt = ReadYesNoTemplate(folder, config);
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  EXPECT_EQ(prompt->preset, "bge-reranker-v2.5-gemma2-lightweight");
  std::vector<int32_t> ids, packed_ids, packed_bounds = {0};
  double worst_pair = 0.0;
  for (size_t k = 0; k < std::size(kPairs); ++k) {
    (*tokenizer)->EncodeYesNoPair(*prompt, std::string(kPairs[k].first), std::string(kPairs[k].second), 0, &ids);
    auto expected = golden->store.Load("pair_ids_" + std::to_string(k), DataType::kI64);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(std::vector<int32_t>(expected->data<int64_t>(), expected->data<int64_t>() + expected->NumElements()), ids)
        << "pair " << k;
    packed_ids.insert(packed_ids.end(), ids.begin(), ids.end());
    packed_bounds.push_back(static_cast<int32_t>(packed_ids.size()));
    auto result = StepAlone(**engine, ids, scores);
    ASSERT_TRUE(result.ok()) << result.status().message();
    worst_pair = std::max(worst_pair, MaxAbsError(*golden, "pair_logits_" + suffix + std::to_string(k),
                                                  {result->values().data<float>(), 1}));
  }
  EXPECT_LE(worst_pair, kTolerance);
  // The pairs, of different lengths, in one step: each score as alone.
  auto packed = (*engine)->Step({packed_ids, packed_bounds, {}}, scores);
  ASSERT_TRUE(packed.ok() && packed->Wait().ok());
  for (size_t k = 0; k < std::size(kPairs); ++k) {
    EXPECT_LE(MaxAbsError(*golden, "pair_logits_" + suffix + std::to_string(k), {packed->values().data<float>() + k, 1}),
              kTolerance)
        << "pair " << k << " packed";
  }
  if (layer == 4) {
    // FlagEmbedding's prompt argument is the template's instruction.
    YesNoTemplate instructed = *prompt;
    instructed.instruction = "Find the passage that answers the question";
    (*tokenizer)->EncodeYesNoPair(instructed, std::string(kPairs[0].first), std::string(kPairs[0].second), 0, &ids);
    auto expected = golden->store.Load("instruction_pair_ids", DataType::kI64);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(std::vector<int32_t>(expected->data<int64_t>(), expected->data<int64_t>() + expected->NumElements()), ids);
    auto result = StepAlone(**engine, ids, scores);
    ASSERT_TRUE(result.ok());
    EXPECT_LE(MaxAbsError(*golden, "instruction_pair_logits", {result->values().data<float>(), 1}), kTolerance);
  }
  // The test tells cut-offs apart: this layer's scores are far from another layer's goldens.
  const int other = layer == 2 ? 3 : 2;
  double apart = 0.0;
  for (size_t k = 0; k < std::size(kPairs); ++k) {
    auto mine = golden->store.Load("pair_logits_" + suffix + std::to_string(k));
    ASSERT_TRUE(mine.ok());
    apart = std::max(apart, MaxAbsError(*golden, "pair_logits_layer" + std::to_string(other) + "_" + std::to_string(k),
                                        {mine->data<float>(), 1}));
  }
  EXPECT_GT(apart, 100 * kTolerance);
  std::cout << "[ golden   ] " << kModel << " cut-off " << layer << ": max abs error " << worst << ", templated pairs "
            << worst_pair << "\n";
}

INSTANTIATE_TEST_SUITE_P(CutoffLayers, LayerWiseRerankerTest, ::testing::Values(2, 3, 4));

// The layers after the cut-off are not run: with their weights all NaN, the score at the cut-off
// is still FlagEmbedding's.
TEST_F(LayerWiseRerankerTest, RunsNoLayerAfterTheCutoff) {
  const std::string folder = FolderWith(R"({"cutoff_layer": 2})");
  auto full = WeightStore::OpenDirectory(folder);
  ASSERT_TRUE(full.ok()) << full.status().message();
  SafetensorsBuilder cut;
  for (const std::string& name : full->Names()) {
    auto tensor = full->Load(name, DataType::kF32);
    ASSERT_TRUE(tensor.ok()) << name;
    std::vector<int64_t> shape;
    for (int axis = 0; axis < tensor->shape().rank(); ++axis) shape.push_back(tensor->shape()[axis]);
    std::vector<float> values(tensor->data<float>(), tensor->data<float>() + tensor->NumElements());
    if (name.starts_with("model.layers.2.") || name.starts_with("model.layers.3.")) {
      std::fill(values.begin(), values.end(), NAN);
    }
    cut.AddFloats(name, shape, values);
  }
  // Written beside and renamed over, as `full` still maps the old file.
  WriteFile(folder + "/cut.safetensors", cut.Bytes());
  std::filesystem::rename(folder + "/cut.safetensors", folder + "/model.safetensors");
  auto engine = Engine::Load(folder, {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto golden = LoadGolden(std::string(kModel));
  ASSERT_TRUE(golden.ok());
  auto result = StepAlone(**engine, golden->ids[5], {.output = StepOutput::kScores});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_LE(MaxAbsError(*golden, "logits_layer2_5", {result->values().data<float>(), 1}), kTolerance);
}

// A cut-off without a head, and token compression, are refused by name.
TEST_F(LayerWiseRerankerTest, RefusesACutoffWithoutAHeadAndTokenCompression) {
  auto engine = Engine::Load(FolderWith(R"({"cutoff_layer": 1})"), {.num_threads = 1});
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("cutoff_layer"), std::string::npos) << engine.status().message();
  EXPECT_NE(engine.status().message().find("allowed: 2, 3, 4"), std::string::npos) << engine.status().message();
  std::filesystem::remove_all(dir_.path() + "/model");
  auto compressed = Engine::Load(FolderWith(R"({"compress_ratio": 2, "compress_layers": [2]})"), {.num_threads = 1});
  ASSERT_FALSE(compressed.ok());
  EXPECT_NE(compressed.status().message().find("'compress_ratio'"), std::string::npos) << compressed.status().message();
  EXPECT_NE(compressed.status().message().find("token compression"), std::string::npos) << compressed.status().message();
  std::filesystem::remove_all(dir_.path() + "/model");
  // Ratio 1 is FlagEmbedding's default, no compression.
  EXPECT_TRUE(Engine::Load(FolderWith(R"({"compress_ratio": 1, "compress_layers": [2]})"), {.num_threads = 1}).ok());
}

TEST(DenseModulesTest, RunAfterPoolingBeforeNormalizeAndTruncation) {
  TempDir dir;
  const std::string folder = dir.path() + "/model";
  std::filesystem::copy(GoldenFolder("tiny-gemma3"), folder, std::filesystem::copy_options::recursive);
  const int64_t hidden = 64, middle = 5, width = 3;
  std::vector<float> w1(middle * hidden), b1(middle), w2(width * middle);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = static_cast<float>(std::sin(0.37 * i)) * 0.3f;
  for (size_t i = 0; i < b1.size(); ++i) b1[i] = 0.1f * static_cast<float>(i) - 0.2f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<float>(std::cos(0.91 * i));
  SafetensorsBuilder first, second;
  first.AddFloats("linear.weight", {middle, hidden}, w1);
  first.AddFloats("linear.bias", {middle}, b1);
  second.AddFloats("linear.weight", {width, middle}, w2);
  WriteFile(folder + "/2_Dense/model.safetensors", first.Bytes());
  WriteFile(folder + "/2_Dense/config.json",
            R"({"in_features":64,"out_features":5,"bias":true,"activation_function":"torch.nn.modules.activation.Tanh"})");
  WriteFile(folder + "/3_Dense/model.safetensors", second.Bytes());
  WriteFile(folder + "/3_Dense/config.json",
            R"({"in_features":5,"out_features":3,"bias":false,"activation_function":"torch.nn.modules.linear.Identity"})");
  WriteFile(folder + "/1_Pooling/config.json", R"({"word_embedding_dimension":64,"pooling_mode_mean_tokens":true})");
  const std::string modules_without_dense =
      R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
      R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])";
  WriteFile(folder + "/modules.json", modules_without_dense);
  const std::vector<int32_t> ids = {2, 17, 400, 9, 33, 2, 5, 801};
  const std::vector<int32_t> bounds = {0, 5, 8};
  auto plain = Engine::Load(folder);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  auto pooled = (*plain)->Step({ids, bounds, {}});
  ASSERT_TRUE(pooled.ok() && pooled->Wait().ok());

  WriteFile(folder + "/modules.json",
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
            R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},)"
            R"({"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"},)"
            R"({"idx":3,"name":"3","path":"3_Dense","type":"sentence_transformers.models.Dense"},)"
            R"({"idx":4,"name":"4","path":"4_Normalize","type":"sentence_transformers.models.Normalize"}])");
  auto engine = Engine::Load(folder);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ((*engine)->embedding_width(), width);
  EXPECT_EQ((*engine)->hidden_size(), hidden);
  auto step = (*engine)->Step({ids, bounds, {}});
  ASSERT_TRUE(step.ok() && step->Wait().ok());
  ASSERT_EQ(step->values().dim(1), width);
  // Normalize follows Dense, and a Matryoshka cut comes before it (FinishRows, as the worker does).
  std::vector<float> full(2 * width), truncated(2 * 2);
  ASSERT_TRUE(FinishRows(*step, 0, 2, width, true, full.data()).ok());
  ASSERT_TRUE(FinishRows(*step, 0, 2, 2, true, truncated.data()).ok());
  for (int64_t s = 0; s < 2; ++s) {
    const float* x = pooled->values().data<float>() + s * hidden;
    std::vector<double> y(width, 0.0);
    for (int64_t j = 0; j < middle; ++j) {
      double z = b1[j];
      for (int64_t k = 0; k < hidden; ++k) z += double{w1[j * hidden + k]} * x[k];
      for (int64_t i = 0; i < width; ++i) y[i] += w2[i * middle + j] * std::tanh(z);
    }
    for (int64_t i = 0; i < width; ++i) EXPECT_NEAR(step->Row(s)[i], y[i], 1e-5);
    // The truncated vector is renormalised.
    auto check = [&](const std::vector<float>& values, int64_t columns) {
      double norm = 0.0;
      for (int64_t i = 0; i < columns; ++i) norm += y[i] * y[i];
      norm = std::sqrt(norm);
      for (int64_t i = 0; i < columns; ++i) EXPECT_NEAR(values[s * columns + i], y[i] / norm, 1e-5);
    };
    check(full, width);
    check(truncated, 2);
  }

  // A Dense module whose in_features do not match the hidden size is refused at load.
  WriteFile(folder + "/2_Dense/config.json", R"({"in_features":32,"out_features":5,"bias":true})");
  auto mismatched = Engine::Load(folder);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("in_features is 32"), std::string::npos)
      << mismatched.status().message();
}

TEST(EngineErrorTest, TruncatedWeights) {
  TempDir dir;
  const std::string folder = CopyModel(dir, "tiny-bert");
  const std::string bytes = ReadBytes(folder + "/model.safetensors");
  WriteFile(folder + "/model.safetensors", bytes.substr(0, bytes.size() - 1000));
  auto engine = Engine::Load(folder);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("model.safetensors: tensor '"), std::string::npos)
      << engine.status().message();
}

TEST(EngineErrorTest, MissingTensor) {
  TempDir dir;
  const std::string folder = CopyModel(dir, "tiny-bert");
  SafetensorsBuilder builder;
  builder.AddFloats("embeddings.word_embeddings.weight", {30522, 64}, std::vector<float>(30522 * 64));
  WriteFile(folder + "/model.safetensors", builder.Bytes());
  auto engine = Engine::Load(folder);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("missing tensor 'embeddings.position_embeddings.weight'"), std::string::npos)
      << engine.status().message();
}

TEST(EngineErrorTest, WrongShape) {
  TempDir dir;
  const std::string folder = CopyModel(dir, "tiny-bert");
  WriteFile(folder + "/config.json", std::string(R"({"architectures":["BertModel"],"hidden_size":64,)") +
                                         R"("num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":256,)" +
                                         R"("vocab_size":30522,"max_position_embeddings":512})");
  auto engine = Engine::Load(folder);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("has shape [128, 64], expected [256, 64]"), std::string::npos)
      << engine.status().message();
}

TEST(EngineErrorTest, UnknownArchitecture) {
  TempDir dir;
  const std::string folder = CopyModel(dir, "tiny-bert");
  WriteFile(folder + "/config.json", R"({"architectures":["GPT2Model"],"hidden_size":64})");
  auto engine = Engine::Load(folder);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("'GPT2Model' is not supported (supported: BertModel"), std::string::npos)
      << engine.status().message();
}

TEST(EngineErrorTest, BadBatchesFailAndLeaveTheEngineUsable) {
  auto engine = Engine::Load(kGolden + "tiny-bert");
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const std::vector<int32_t> ids = {101, 7592, 102};
  const std::vector<int32_t> bounds = {0, 3};
  const StepOptions mean{.pooling = ops::PoolingMode::kMean};
  auto fine = (*engine)->Step({ids, bounds, {}}, mean);
  ASSERT_TRUE(fine.ok()) << fine.status().message();

  auto expect_error = [&](const Batch& batch, const StepOptions& options, const std::string& fragment) {
    auto result = (*engine)->Step(batch, options);
    ASSERT_FALSE(result.ok()) << fragment;
    EXPECT_NE(result.status().message().find(fragment), std::string::npos) << result.status().message();
  };
  const std::vector<int32_t> bad_id = {101, 30522, 102};
  expect_error({bad_id, bounds, {}}, mean, "id 30522 at index 1");
  const std::vector<int32_t> bad_bounds = {0, 2};
  expect_error({ids, bad_bounds, {}}, mean, "end at 2 but there are 3 tokens");
  const std::vector<int32_t> empty_sequence = {0, 0, 3};
  expect_error({ids, empty_sequence, {}}, mean, "at least one token");
  const std::vector<int32_t> bad_types = {0, 2, 0};
  expect_error({ids, bounds, bad_types}, mean, "token type ids: id 2 at index 1");
  expect_error({ids, bounds, {}}, {}, "choose a pooling mode");
  expect_error({ids, bounds, {}}, {.output = StepOutput::kScores}, "no classification head");
  const std::vector<int32_t> long_ids(513, 100);
  const std::vector<int32_t> long_bounds = {0, 513};
  expect_error({long_ids, long_bounds, {}}, mean, "at most 512");

  auto again = (*engine)->Step({ids, bounds, {}}, mean);
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(again->Row(0)[i], fine->Row(0)[i]);
}

TEST(EngineTest, ThreadCountDoesNotChangeResults) {
  auto single = Engine::Load(kGolden + "tiny-qwen2", {.num_threads = 1});
  auto pair = Engine::Load(kGolden + "tiny-qwen2", {.num_threads = 2});
  ASSERT_TRUE(single.ok() && pair.ok());
  // Long enough for the attention kernel to split its work across threads.
  std::vector<int32_t> ids(900);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919) % 1000);
  const std::vector<int32_t> bounds = {0, 300, 301, 700, 900};
  const StepOptions tokens{.output = StepOutput::kTokenEmbeddings};
  auto a = (*single)->Step({ids, bounds, {}}, tokens);
  auto b = (*pair)->Step({ids, bounds, {}}, tokens);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->values().shape(), b->values().shape());
  for (int64_t i = 0; i < a->values().NumElements(); ++i) {
    ASSERT_NEAR(a->values().data<float>()[i], b->values().data<float>()[i], 1e-5) << i;
  }
}

TEST(EngineTest, MatryoshkaTruncatesBeforeNormalizing) {
  auto engine = Engine::Load(kGolden + "tiny-xlm-roberta");
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const std::vector<int32_t> ids = {0, 500, 600, 2};
  const std::vector<int32_t> bounds = {0, 4};
  auto full = (*engine)->Step({ids, bounds, {}}, {.pooling = ops::PoolingMode::kMean});
  ASSERT_TRUE(full.ok() && full->Wait().ok());
  ASSERT_EQ(full->values().shape(), (Shape{1, 64}));
  std::vector<float> small(16);
  ASSERT_TRUE(FinishRows(*full, 0, 1, 16, true, small.data()).ok());
  double norm = 0.0;
  for (int i = 0; i < 16; ++i) norm += double{full->Row(0)[i]} * full->Row(0)[i];
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(small[i], full->Row(0)[i] / std::sqrt(norm), 1e-6);
  // A row narrower than asked is an error, not a read past it.
  std::vector<float> wide(65);
  EXPECT_FALSE(FinishRows(*full, 0, 1, 65, true, wide.data()).ok());
}

TEST(EngineTest, TokenTypesChangeBertOutputs) {
  auto engine = Engine::Load(kGolden + "tiny-bert");
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const std::vector<int32_t> ids = {101, 2000, 102, 3000, 102};
  const std::vector<int32_t> bounds = {0, 5};
  const std::vector<int32_t> zeros(5, 0), pair = {0, 0, 0, 1, 1};
  const StepOptions cls{.pooling = ops::PoolingMode::kCls};
  auto implicit = (*engine)->Step({ids, bounds, {}}, cls);
  auto explicit_zeros = (*engine)->Step({ids, bounds, zeros}, cls);
  auto segments = (*engine)->Step({ids, bounds, pair}, cls);
  ASSERT_TRUE(implicit.ok() && explicit_zeros.ok() && segments.ok());
  double difference = 0.0;
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(implicit->Row(0)[i], explicit_zeros->Row(0)[i]);
    difference = std::max(difference, double{std::abs(segments->Row(0)[i] - implicit->Row(0)[i])});
  }
  EXPECT_GT(difference, 1e-3);
}

TEST(EngineTest, DecoderDefaultsToLastTokenAndNormalizes) {
  auto engine = Engine::Load(kGolden + "tiny-qwen2");
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ((*engine)->default_pooling(), ops::PoolingMode::kLastToken);
  auto golden = LoadGolden("tiny-qwen2");
  ASSERT_TRUE(golden.ok());
  const std::vector<int32_t> bounds = {0, static_cast<int32_t>(golden->ids[2].size())};
  auto result = (*engine)->Step({golden->ids[2], bounds, {}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_TRUE(result->Wait().ok());
  std::vector<float> normalized(64);
  ASSERT_TRUE(FinishRows(*result, 0, 1, 64, true, normalized.data()).ok());
  auto expected = golden->store.Load("last_token_2");
  ASSERT_TRUE(expected.ok());
  double norm = 0.0;
  for (int i = 0; i < 64; ++i) norm += double{expected->data<float>()[i]} * expected->data<float>()[i];
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(normalized[i], expected->data<float>()[i] / std::sqrt(norm), 1e-5);

  auto bidirectional = Engine::Load(kGolden + "tiny-qwen2", {.causal = false});
  ASSERT_TRUE(bidirectional.ok());
  EXPECT_EQ((*bidirectional)->default_pooling(), ops::PoolingMode::kMean);
  EXPECT_FALSE(Engine::Load(kGolden + "tiny-bert", {.causal = true}).ok());
}

// A …ForMaskedLM folder gives SPLADE vectors by default, over the whole vocabulary; batches
// longer than one slice of logits (256 tokens), with sequences across slice boundaries, give
// what each sequence gives alone.
TEST(SpladeTest, DefaultPoolingAndSlicesAcrossSequences) {
  auto engine = Engine::Load(kLocalGolden + "tiny-bert-splade", {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ((*engine)->default_pooling(), ops::PoolingMode::kSplade);
  EXPECT_EQ((*engine)->embedding_width(), 1000);
  // What the gateway can say without loading the model agrees.
  EXPECT_EQ(DefaultPooling((*engine)->config(), (*engine)->sentence_transformers()), ops::PoolingMode::kSplade);
  EXPECT_EQ(DefaultEmbeddingWidth((*engine)->config(), (*engine)->sentence_transformers()), 1000);
  auto golden = LoadGolden("tiny-bert-splade");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  std::vector<int32_t> ids, bounds = {0};
  std::vector<int> which;
  for (int round = 0; round < 3; ++round) {
    for (int i = kSequences - 1; i >= 0; --i) {  // 130 first: the second round straddles token 256
      ids.insert(ids.end(), golden->ids[i].begin(), golden->ids[i].end());
      bounds.push_back(static_cast<int32_t>(ids.size()));
      which.push_back(i);
    }
  }
  ASSERT_GT(ids.size(), 512u);
  auto result = (*engine)->Step({ids, bounds, {}});  // default options: splade
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_TRUE(result->Wait().ok());
  ASSERT_EQ(result->values().shape(), (Shape{static_cast<int64_t>(which.size()), 1000}));
  for (size_t s = 0; s < which.size(); ++s) {
    EXPECT_LE(MaxAbsError(*golden, "splade_" + std::to_string(which[s]), result->Row(static_cast<int64_t>(s))),
              kTolerance)
        << "sequence " << s;
  }
}

TEST(SpladeTest, NeedsAMaskedLmHead) {
  auto engine = Engine::Load(kLocalGolden + "tiny-bert-classifier");
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const std::vector<int32_t> ids = {1, 5, 2};
  const std::vector<int32_t> bounds = {0, 3};
  auto result = (*engine)->Step({ids, bounds, {}}, {.pooling = ops::PoolingMode::kSplade});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("no masked-LM head"), std::string::npos) << result.status().message();
}

// Per-token output keeps the batch's boundaries, so a caller splits it without its own copy.
TEST(EngineTest, TokenEmbeddingsCarryTheirSequenceOffsets) {
  auto engine = Engine::Load(kLocalGolden + "tiny-bert-classifier");
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const std::vector<int32_t> ids = {1, 5, 2, 1, 7, 8, 2};
  const std::vector<int32_t> bounds = {0, 3, 7};
  auto result = (*engine)->Step({ids, bounds, {}}, {.output = StepOutput::kTokenEmbeddings});
  ASSERT_TRUE(result.ok() && result->Wait().ok());
  ASSERT_EQ(std::vector<int32_t>(result->sequence_offsets().begin(), result->sequence_offsets().end()), bounds);
  EXPECT_EQ(result->SequenceRows(0).shape(), (Shape{3, 64}));
  EXPECT_EQ(result->SequenceRows(1).shape(), (Shape{4, 64}));
  EXPECT_EQ(result->SequenceRows(1).data<float>(), result->values().data<float>() + 3 * 64);
  EXPECT_TRUE(result->SequenceRows(2).empty());
  auto pooled = (*engine)->Step({ids, bounds, {}}, {.pooling = ops::PoolingMode::kMean});
  ASSERT_TRUE(pooled.ok());
  EXPECT_TRUE(pooled->sequence_offsets().empty());
}

}  // namespace
}  // namespace stamen::engine
