// Multi-vector (ColBERT) routes over real HTTP (issue 44): `stamen serve`'s gateway with an
// in-process worker, and with a gRPC worker, on tests/engine/data/tiny-colbert-bert (PyLate's own folder and vectors,
// tools/make_multi_vector_goldens.py). POST /v1/multi-vector answers PyLate's query and document
// vectors (every embedding_type), /rerank, /v1/rerank and /v2/rerank answer PyLate's
// colbert_scores (MaxSim, no sigmoid, raw_scores or not), pooled routes refuse the model and
// /embed_all keeps the hidden states; a pooled model refuses /v1/multi-vector.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "gateway/quantize.h"
#include "tests/gateway/base64_floats.h"
#include "tests/gateway/http_client.h"
#include "tests/gateway/served_model.h"

namespace stamen::gateway {
namespace {

using testing::DecodeBase64Floats;
using testing::Http;
using testing::Post;

const std::string kData = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/";

using Served = testing::ServedModel;

std::vector<float> Floats(simdjson::dom::element array) {
  std::vector<float> values;
  for (simdjson::dom::element value : array.get_array()) values.push_back(static_cast<float>(double(value)));
  return values;
}

std::string JsonStrings(simdjson::dom::array texts) {
  std::string out = "[";
  for (simdjson::dom::element text : texts) {
    if (out.size() > 1) out += ',';
    out += simdjson::to_string(text);
  }
  return out + "]";
}

class MultiVectorRoutesTest : public ::testing::TestWithParam<bool> {
 protected:
  static void SetUpTestSuite() {
    in_process_ = new Served(kData + "tiny-colbert-bert");
    over_grpc_ = new Served(kData + "tiny-colbert-bert", /*grpc=*/true);
  }
  static void TearDownTestSuite() {
    delete in_process_;
    delete over_grpc_;
  }
  void SetUp() override {
    reference_ = reference_parser_.load(kData + "tiny-colbert-bert/reference.json");
    served_ = GetParam() ? over_grpc_ : in_process_;
  }

  // The answer's data[i].embeddings, each vector as floats (float or base64 answers).
  std::vector<std::vector<std::vector<float>>> Vectors(const std::string& body, bool base64) {
    std::vector<std::vector<std::vector<float>>> inputs;
    simdjson::dom::element root = parser_.parse(body);
    EXPECT_EQ(std::string_view(root["object"]), "list");
    for (simdjson::dom::element item : root["data"].get_array()) {
      EXPECT_EQ(int64_t(item["index"]), static_cast<int64_t>(inputs.size()));
      auto& vectors = inputs.emplace_back();
      for (simdjson::dom::element vector : item["embeddings"].get_array()) {
        vectors.push_back(base64 ? DecodeBase64Floats(std::string_view(vector)) : Floats(vector));
      }
    }
    return inputs;
  }

  static Served* in_process_;
  static Served* over_grpc_;
  Served* served_ = nullptr;
  simdjson::dom::parser parser_, reference_parser_;
  simdjson::dom::element reference_;
};
Served* MultiVectorRoutesTest::in_process_ = nullptr;
Served* MultiVectorRoutesTest::over_grpc_ = nullptr;

void ExpectVectorsNear(const std::vector<std::vector<std::vector<float>>>& actual, simdjson::dom::array expected,
                       const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    simdjson::dom::array vectors = expected.at(i).get_array();
    ASSERT_EQ(actual[i].size(), vectors.size()) << what << " " << i;
    for (size_t k = 0; k < vectors.size(); ++k) {
      const std::vector<float> reference = Floats(vectors.at(k));
      ASSERT_EQ(actual[i][k].size(), reference.size());
      for (size_t c = 0; c < reference.size(); ++c) {
        EXPECT_NEAR(actual[i][k][c], reference[c], 1e-4) << what << " " << i << " vector " << k;
      }
    }
  }
}

TEST_P(MultiVectorRoutesTest, QueriesAndDocumentsGivePyLatesVectors) {
  const std::string queries = JsonStrings(reference_["queries"].get_array());
  const std::string documents = JsonStrings(reference_["documents"].get_array());
  auto answer = Post(served_->port(), "/v1/multi-vector", R"({"model": "m", "input_type": "query", "input": )" + queries + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  ExpectVectorsNear(Vectors(answer.body, false), reference_["query_vectors"].get_array(), "query");
  // Documents are the default input_type.
  answer = Post(served_->port(), "/v1/multi-vector", R"({"input": )" + documents + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  const auto floats = Vectors(answer.body, false);
  ExpectVectorsNear(floats, reference_["document_vectors"].get_array(), "document");
  simdjson::dom::element root = parser_.parse(answer.body);
  int64_t tokens = 0;
  for (simdjson::dom::element ids : reference_["document_ids"].get_array()) tokens += ids.get_array().size();
  EXPECT_EQ(int64_t(root["usage"]["total_tokens"]), tokens);

  answer = Post(served_->port(), "/v1/multi-vector", R"({"input": )" + documents + R"(, "embedding_type": "base64"})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(Vectors(answer.body, true), floats);
  // binary / ubinary: each float vector's sign bits as quantize_embeddings packs them.
  for (const auto& [name, type] : {std::pair{"binary", EmbeddingType::kBinary}, std::pair{"ubinary", EmbeddingType::kUbinary}}) {
    answer = Post(served_->port(), "/v1/multi-vector", R"({"input": )" + documents + R"(, "embedding_type": ")" + name + R"("})");
    ASSERT_EQ(answer.status, 200) << answer.body;
    const auto packed = Vectors(answer.body, false);
    ASSERT_EQ(packed.size(), floats.size());
    for (size_t i = 0; i < floats.size(); ++i) {
      ASSERT_EQ(packed[i].size(), floats[i].size());
      for (size_t k = 0; k < floats[i].size(); ++k) {
        const auto expected = QuantizeRow(floats[i][k].data(), floats[i][k].size(), type, {});
        ASSERT_EQ(packed[i][k].size(), (floats[i][k].size() + 7) / 8) << name;
        for (size_t b = 0; b < expected.size(); ++b) EXPECT_EQ(packed[i][k][b], static_cast<float>(expected[b])) << name;
      }
    }
  }
}

TEST_P(MultiVectorRoutesTest, RerankScoresArePyLatesMaxSim) {
  simdjson::dom::array queries = reference_["queries"].get_array();
  const std::string documents = JsonStrings(reference_["documents"].get_array());
  simdjson::dom::array scores = reference_["scores"].get_array();
  for (size_t q = 0; q < queries.size(); ++q) {
    const std::string query = simdjson::to_string(queries.at(q));
    const std::vector<float> expected = Floats(scores.at(q));
    struct Call {
      const char* path;
      std::string body;
      const char* score;
      bool wrapped;  // {"results": [...]} rather than [...]
    };
    const Call calls[] = {
        {"/rerank", R"({"query": )" + query + R"(, "texts": )" + documents + "}", "score", false},
        {"/rerank", R"({"query": )" + query + R"(, "texts": )" + documents + R"(, "raw_scores": true})", "score", false},
        {"/v1/rerank", R"({"query": )" + query + R"(, "documents": )" + documents + "}", "relevance_score", true},
        {"/v2/rerank", R"({"model": "m", "query": )" + query + R"(, "documents": )" + documents + "}", "relevance_score", true},
    };
    for (const Call& call : calls) {
      const auto answer = Post(served_->port(), call.path, call.body);
      ASSERT_EQ(answer.status, 200) << call.path << ": " << answer.body;
      simdjson::dom::element root = parser_.parse(answer.body);
      simdjson::dom::array results = call.wrapped ? root["results"].get_array() : root.get_array();
      ASSERT_EQ(results.size(), expected.size());
      double previous = INFINITY;
      for (simdjson::dom::element result : results) {
        const double score = double(result[call.score]);
        EXPECT_NEAR(score, expected[int64_t(result["index"])], 1e-4) << call.path << " query " << q;
        EXPECT_LE(score, previous) << "sorted best first";
        previous = score;
      }
    }
  }
}

TEST_P(MultiVectorRoutesTest, PooledRoutesRefuseAndEmbedAllGivesHiddenStates) {
  for (const char* path : {"/embed", "/v1/embeddings"}) {
    const auto answer = Post(served_->port(), path, R"({"input": "a", "inputs": "a"})");
    EXPECT_EQ(answer.status, 400) << path << ": " << answer.body;
    EXPECT_NE(answer.body.find("multi-vector"), std::string::npos) << answer.body;
  }
  const auto all = Post(served_->port(), "/embed_all", R"({"inputs": "the cat"})");
  ASSERT_EQ(all.status, 200) << all.body;
  simdjson::dom::element root = parser_.parse(all.body);
  EXPECT_EQ(root.at(0).at(0).get_array().size(), 64u) << "the backbone's hidden size, not the 24 of the Dense";
  const auto info = Http(served_->port(), "GET", "/info");
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_NE(info.body.find(R"("model_type":{"embedding":{"pooling":"none"}})"), std::string::npos) << info.body;
  EXPECT_EQ(Post(served_->port(), "/v1/multi-vector", R"({"input": "a", "input_type": "passage"})").status, 400);
  EXPECT_EQ(Post(served_->port(), "/v1/multi-vector", R"({"input": "a", "embedding_type": "int8"})").status, 400);
}

INSTANTIATE_TEST_SUITE_P(Workers, MultiVectorRoutesTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Grpc" : "InProcess"; });

TEST(MultiVectorRoutesRefusalTest, APooledModelRefusesMultiVector) {
  // The same backbone and tokenizer without PyLate's modules: a plain BERT embedder.
  namespace fs = std::filesystem;
  const fs::path folder = fs::temp_directory_path() / ("stamen_plain_bert_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
    fs::copy_file(kData + "tiny-colbert-bert/" + file, folder / file, fs::copy_options::overwrite_existing);
  }
  Served served(folder.string());
  const auto answer = Post(served.port(), "/v1/multi-vector", R"({"input": "a"})");
  EXPECT_EQ(answer.status, 400) << answer.body;
  EXPECT_NE(answer.body.find("not a multi-vector"), std::string::npos) << answer.body;
  std::error_code error;
  fs::remove_all(folder, error);
}

}  // namespace
}  // namespace stamen::gateway
