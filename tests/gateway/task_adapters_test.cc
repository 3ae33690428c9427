// Task adapters over HTTP (issue 48, jina-embeddings-v3): the "task" of /embed, /v1/embeddings,
// /v2/embed, /embed_all and /similarity (and the task a Cohere input_type stands for) runs every input with that task's
// LoRA adapter and puts the task's instruction before each text. Checked on
// tests/engine/data/tiny-jina-v3-hub-bf16 (the hub's layout; its goldens are transformers 5.25 on
// the weights with the task's adapter merged, tools/make_jina_v3_goldens.py), served with an
// in-process worker and with a gRPC worker, with a 101-piece Unigram tokenizer beside it.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "engine/weight_store.h"
#include "tests/common/temp_dir.h"
#include "tests/gateway/http_client.h"
#include "tests/gateway/served_model.h"

namespace stamen::gateway {
namespace {

namespace fs = std::filesystem;
using testing::Post;

const std::string kData = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/";
const std::string kQueryInstruction = "Represent the query for retrieving evidence documents: ";

// `model`'s config and weights with a tokenizer whose ids fit its 1,000-row vocabulary.
void WriteServableFolder(const std::string& model, const fs::path& folder) {
  for (const char* file : {"config.json", "model.safetensors"}) {
    fs::copy_file(kData + model + "/" + file, folder / file, fs::copy_options::overwrite_existing);
  }
  for (const char* file : {"tokenizer.json", "tokenizer_config.json"}) {
    fs::copy_file(kData + "tiny-deberta-v3-reranker/" + file, folder / file, fs::copy_options::overwrite_existing);
  }
}

std::vector<float> Floats(simdjson::dom::element array) {
  std::vector<float> values;
  for (simdjson::dom::element value : array.get_array()) values.push_back(static_cast<float>(double(value)));
  return values;
}

std::vector<float> Normalized(std::vector<float> values) {
  double norm = 0;
  for (float value : values) norm += double(value) * value;
  for (float& value : values) value = static_cast<float>(value / std::sqrt(norm));
  return values;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected, double tolerance,
                const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t j = 0; j < actual.size(); ++j) EXPECT_NEAR(actual[j], expected[j], tolerance) << what << " [" << j << "]";
}

class TaskAdaptersTest : public ::testing::TestWithParam<bool> {
 protected:
  static void SetUpTestSuite() {
    folder_ = new test::TempDir("task_adapters");
    WriteServableFolder("tiny-jina-v3-hub-bf16", folder_->path());
    in_process_ = new testing::ServedModel(folder_->path(), false, engine::ops::PoolingMode::kMean);
    over_grpc_ = new testing::ServedModel(folder_->path(), true, engine::ops::PoolingMode::kMean);
  }
  static void TearDownTestSuite() {
    delete in_process_;
    delete over_grpc_;
    delete folder_;
  }
  void SetUp() override {
    served_ = GetParam() ? over_grpc_ : in_process_;
    auto golden = engine::WeightStore::OpenFile(kData + "tiny-jina-v3-hub-bf16/golden.safetensors");
    ASSERT_TRUE(golden.ok()) << golden.status().message();
    auto ids = golden->Load("input_ids_3", engine::DataType::kI64);
    ASSERT_TRUE(ids.ok());
    ids_ = "[";
    for (int64_t i = 0; i < ids->NumElements(); ++i) ids_ += (i ? "," : "") + std::to_string(ids->data<int64_t>()[i]);
    ids_ += "]";
    for (const char* task : {"retrieval.passage", "text-matching", "none"}) {
      auto pooled = golden->Load(std::string("mean_pooled_") + task + "_3");
      ASSERT_TRUE(pooled.ok());
      golden_[task] = std::vector<float>(pooled->data<float>(), pooled->data<float>() + pooled->NumElements());
    }
  }

  // POST `path` with `body`: the answer, expected 200.
  simdjson::dom::element Answer(const std::string& path, const std::string& body) {
    const auto answer = Post(served_->port(), path, body);
    EXPECT_EQ(answer.status, 200) << path << " " << body << ": " << answer.body;
    bodies_.push_back(answer.body);
    return parser_.parse(bodies_.back());
  }
  // TEI /embed's vectors (not normalised) for `inputs` with `task`.
  std::vector<std::vector<float>> Embed(const std::string& inputs, const std::string& task) {
    std::vector<std::vector<float>> rows;
    const std::string field = task.empty() ? "" : R"(, "task": ")" + task + "\"";
    for (simdjson::dom::element row : Answer("/embed", R"({"inputs": )" + inputs + R"(, "normalize": false)" + field + "}").get_array()) {
      rows.push_back(Floats(row));
    }
    return rows;
  }
  // The ids /tokenize gives `text` (special tokens added).
  std::string TokenIds(const std::string& text) {
    std::string ids = "[";
    for (simdjson::dom::element token : Answer("/tokenize", R"({"inputs": ")" + text + "\"}").at(0).get_array()) {
      ids += (ids.size() > 1 ? "," : "") + std::to_string(int64_t(token["id"]));
    }
    return ids + "]";
  }

  static test::TempDir* folder_;
  static testing::ServedModel* in_process_;
  static testing::ServedModel* over_grpc_;
  testing::ServedModel* served_ = nullptr;
  std::string ids_;
  std::map<std::string, std::vector<float>> golden_;
  simdjson::dom::parser parser_;
  std::vector<std::string> bodies_;
};

test::TempDir* TaskAdaptersTest::folder_ = nullptr;
testing::ServedModel* TaskAdaptersTest::in_process_ = nullptr;
testing::ServedModel* TaskAdaptersTest::over_grpc_ = nullptr;

TEST_P(TaskAdaptersTest, EachTaskGivesTransformersVectorsWithThatTasksAdapter) {
  for (const std::string task : {"retrieval.passage", "text-matching", ""}) {
    const auto rows = Embed("[" + ids_ + "," + ids_ + "]", task);
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& row : rows) ExpectNear(row, golden_[task.empty() ? "none" : task], 1e-4, "/embed " + task);
  }
  // OpenAI's route normalises.
  simdjson::dom::element openai = Answer("/v1/embeddings", R"({"input": [)" + ids_ + R"(], "task": "text-matching"})");
  ExpectNear(Floats(openai["data"].at(0)["embedding"]), Normalized(golden_["text-matching"]), 1e-5, "/v1/embeddings");
}

// /embed_all runs its inputs with the task: the mean of its token states is transformers' mean-
// pooled vector with that task's adapter.
TEST_P(TaskAdaptersTest, EmbedAllRunsTheTask) {
  for (const std::string task : {"text-matching", ""}) {
    const std::string field = task.empty() ? "" : R"(, "task": ")" + task + "\"";
    simdjson::dom::element tokens = Answer("/embed_all", R"({"inputs": [)" + ids_ + "]" + field + "}").at(0);
    std::vector<float> mean;
    size_t count = 0;
    for (simdjson::dom::element token : tokens.get_array()) {
      const std::vector<float> state = Floats(token);
      mean.resize(state.size(), 0.0f);
      for (size_t j = 0; j < state.size(); ++j) mean[j] += state[j];
      ++count;
    }
    for (float& value : mean) value /= static_cast<float>(count);
    ExpectNear(mean, golden_[task.empty() ? "none" : task], 1e-4, "/embed_all " + task);
  }
}

// /similarity runs the source and the sentences with the task (its instruction before each):
// the cosines of /embed's vectors of the same texts with the same task.
TEST_P(TaskAdaptersTest, SimilarityRunsTheTask) {
  const auto cosine = [](const std::vector<float>& a, const std::vector<float>& b) {
    double dot = 0, a_squares = 0, b_squares = 0;
    for (size_t j = 0; j < a.size(); ++j) {
      dot += double(a[j]) * b[j];
      a_squares += double(a[j]) * a[j];
      b_squares += double(b[j]) * b[j];
    }
    return dot / std::sqrt(a_squares * b_squares);
  };
  for (const std::string task : {"retrieval.query", "text-matching"}) {
    const auto vectors = Embed(R"(["hello world", "hello there", "a red car"])", task);
    simdjson::dom::element similarities = Answer(
        "/similarity", R"({"inputs": {"source_sentence": "hello world", "sentences": ["hello there", "a red car"]}, "task": ")" +
                           task + "\"}");
    ASSERT_EQ(similarities.get_array().size(), 2u);
    EXPECT_NEAR(double(similarities.at(0)), cosine(vectors[0], vectors[1]), 1e-5) << task;
    EXPECT_NEAR(double(similarities.at(1)), cosine(vectors[0], vectors[2]), 1e-5) << task;
  }
}

// Requests of different tasks at once: each answer is its own task's, whichever batches the
// worker cut (the scheduler test shows tasks sharing a batch).
TEST_P(TaskAdaptersTest, ConcurrentRequestsOfDifferentTasksEachGetTheirOwn) {
  const std::vector<std::string> tasks = {"retrieval.passage", "text-matching", "", "retrieval.passage", "", "text-matching"};
  std::vector<std::future<testing::HttpAnswer>> answers;
  for (const std::string& task : tasks) {
    const std::string body = R"({"inputs": [)" + ids_ + "," + ids_ + R"(], "normalize": false)" +
                             (task.empty() ? "" : R"(, "task": ")" + task + "\"") + "}";
    answers.push_back(std::async(std::launch::async, [this, body] { return Post(served_->port(), "/embed", body); }));
  }
  for (size_t k = 0; k < tasks.size(); ++k) {
    const testing::HttpAnswer answer = answers[k].get();
    ASSERT_EQ(answer.status, 200) << answer.body;
    simdjson::dom::parser parser;
    for (simdjson::dom::element row : parser.parse(answer.body).get_array()) {
      ExpectNear(Floats(row), golden_[tasks[k].empty() ? "none" : tasks[k]], 1e-4, "concurrent " + tasks[k]);
    }
  }
}

// A text runs with its task's instruction before it (retrieval.query has one, separation none):
// the same vector as the ids /tokenize gives for instruction + text, run with that task.
TEST_P(TaskAdaptersTest, ATextRunsWithItsTasksInstructionBeforeIt) {
  const std::string text = "hello world";
  ExpectNear(Embed("\"" + text + "\"", "retrieval.query").at(0),
             Embed("[" + TokenIds(kQueryInstruction + text) + "]", "retrieval.query").at(0), 1e-5, "retrieval.query");
  ExpectNear(Embed("\"" + text + "\"", "separation").at(0), Embed("[" + TokenIds(text) + "]", "separation").at(0), 1e-5,
             "separation");
  // The instruction matters: without it the query's vector differs.
  const auto with = Embed("\"" + text + "\"", "retrieval.query").at(0);
  const auto without = Embed("[" + TokenIds(text) + "]", "retrieval.query").at(0);
  double difference = 0;
  for (size_t j = 0; j < with.size(); ++j) difference = std::max(difference, double(std::abs(with[j] - without[j])));
  EXPECT_GT(difference, 1e-3);
}

// Cohere's input_type stands for the retrieval tasks; an explicit "task" wins.
TEST_P(TaskAdaptersTest, CohereInputTypeStandsForATask) {
  const std::string texts = R"("texts": ["hello world"], "embedding_types": ["float"])";
  const auto cohere = [&](const std::string& fields) {
    return Floats(Answer("/v2/embed", "{" + texts + ", " + fields + "}")["embeddings"]["float"].at(0));
  };
  const auto openai = [&](const std::string& task) {
    return Floats(Answer("/v1/embeddings", R"({"input": "hello world", "task": ")" + task + "\"}")["data"].at(0)["embedding"]);
  };
  ExpectNear(cohere(R"("input_type": "search_query")"), openai("retrieval.query"), 1e-5, "search_query");
  ExpectNear(cohere(R"("input_type": "search_document")"), openai("retrieval.passage"), 1e-5, "search_document");
  ExpectNear(cohere(R"("input_type": "clustering")"), openai("separation"), 1e-5, "clustering");
  ExpectNear(cohere(R"("input_type": "search_query", "task": "text-matching")"), openai("text-matching"), 1e-5, "task");
}

TEST_P(TaskAdaptersTest, AnUnknownTaskIsA400ListingTheModelsTasksAndInfoListsThem) {
  for (const std::string path : {"/embed", "/embed_all", "/v1/embeddings", "/v2/embed", "/similarity"}) {
    const std::string body = path == "/v2/embed"    ? R"({"texts": ["x"], "task": "query"})"
                             : path == "/v1/embeddings" ? R"({"input": "x", "task": "query"})"
                             : path == "/similarity"
                                 ? R"({"inputs": {"source_sentence": "x", "sentences": ["y"]}, "task": "query"})"
                                 : R"({"inputs": "x", "task": "query"})";
    const auto answer = Post(served_->port(), path, body);
    EXPECT_EQ(answer.status, 400) << path << ": " << answer.body;
    EXPECT_NE(answer.body.find("'task' 'query' is not one of the model's task adapters ('retrieval.query', "
                               "'retrieval.passage', 'separation', 'classification', 'text-matching')"),
              std::string::npos)
        << path << ": " << answer.body;
  }
  const auto info = testing::Http(served_->port(), "GET", "/info");
  ASSERT_EQ(info.status, 200);
  simdjson::dom::parser parser;
  simdjson::dom::element tasks = parser.parse(info.body)["tasks"];
  EXPECT_EQ(std::string_view(tasks["retrieval.query"]), kQueryInstruction);
  EXPECT_EQ(std::string_view(tasks["separation"]), "");
}

INSTANTIATE_TEST_SUITE_P(InProcessAndOverGrpc, TaskAdaptersTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Grpc" : "InProcess"; });

// A model without task adapters (jina-embeddings-v3 in transformers' own layout) refuses a task,
// and says it has none.
TEST(TaskAdaptersRefusalTest, AModelWithoutAdaptersRefusesATask) {
  test::TempDir folder("no_adapters");
  WriteServableFolder("tiny-jina-v3", folder.path());
  testing::ServedModel served(folder.path(), false, engine::ops::PoolingMode::kMean);
  const auto answer = Post(served.port(), "/embed", R"({"inputs": "x", "task": "retrieval.query"})");
  EXPECT_EQ(answer.status, 400) << answer.body;
  EXPECT_NE(answer.body.find("is not one of the model's task adapters (none)"), std::string::npos) << answer.body;
  EXPECT_EQ(testing::Http(served.port(), "GET", "/info").body.find("\"tasks\""), std::string::npos);
  // Without a task it embeds as before.
  EXPECT_EQ(Post(served.port(), "/embed", R"({"inputs": "x"})").status, 200);
}

}  // namespace
}  // namespace stamen::gateway
