// bge-m3 over real HTTP (issue 44): `stamen serve`'s gateway with an in-process worker, and with a
// gRPC worker, on tests/engine/data/tiny-bge-m3 (FlagEmbedding 1.4.2's own outputs,
// tools/make_bge_m3_goldens.py). POST /embed_multi answers BGEM3FlagModel.encode's dense, sparse
// and ColBERT outputs, each only when asked; /embed, /embed_sparse and /v1/multi-vector give each
// alone. Also the body parser and writer without a server, and the refusals.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <string>
#include <vector>

#include "gateway/api.h"
#include "gateway/bge_m3_outputs.h"
#include "tests/gateway/base64_floats.h"
#include "tests/gateway/http_client.h"
#include "tests/gateway/served_model.h"

namespace stamen::gateway {
namespace {

using testing::DecodeBase64Floats;
using testing::Post;

const std::string kData = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/";
constexpr double kTolerance = 1e-4;

using Served = testing::ServedModel;

std::vector<float> Floats(simdjson::dom::element array) {
  std::vector<float> values;
  for (simdjson::dom::element value : array.get_array()) values.push_back(static_cast<float>(double(value)));
  return values;
}

void ExpectFloatsNear(const std::vector<float>& actual, simdjson::dom::element expected, const std::string& what) {
  const std::vector<float> reference = Floats(expected);
  ASSERT_EQ(actual.size(), reference.size()) << what;
  for (size_t c = 0; c < reference.size(); ++c) EXPECT_NEAR(actual[c], reference[c], kTolerance) << what << " [" << c << "]";
}

// [[{index, value}]] (TEI's sparse shape) against the reference's [[[id, weight]]], both in id order.
void ExpectSparseNear(simdjson::dom::array actual, simdjson::dom::array expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    simdjson::dom::array entries = actual.at(i).get_array();
    simdjson::dom::array reference = expected.at(i).get_array();
    ASSERT_EQ(entries.size(), reference.size()) << "input " << i;
    for (size_t k = 0; k < reference.size(); ++k) {
      EXPECT_EQ(int64_t(entries.at(k)["index"]), int64_t(reference.at(k).at(0))) << "input " << i << " entry " << k;
      EXPECT_NEAR(double(entries.at(k)["value"]), double(reference.at(k).at(1)), kTolerance) << "input " << i;
    }
  }
}

// [[[f]]] per input (or base64 strings of each vector) against the reference's ColBERT vectors.
void ExpectColbertNear(simdjson::dom::array actual, simdjson::dom::array expected, bool base64) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    simdjson::dom::array vectors = actual.at(i).get_array();
    simdjson::dom::array reference = expected.at(i).get_array();
    ASSERT_EQ(vectors.size(), reference.size()) << "input " << i;
    for (size_t k = 0; k < reference.size(); ++k) {
      const std::vector<float> vector =
          base64 ? DecodeBase64Floats(std::string_view(vectors.at(k))) : Floats(vectors.at(k));
      ExpectFloatsNear(vector, reference.at(k), "input " + std::to_string(i) + " vector " + std::to_string(k));
    }
  }
}

class BgeM3RoutesTest : public ::testing::TestWithParam<bool> {
 protected:
  static void SetUpTestSuite() {
    in_process_ = new Served(kData + "tiny-bge-m3");
    over_grpc_ = new Served(kData + "tiny-bge-m3", /*grpc=*/true);
  }
  static void TearDownTestSuite() {
    delete in_process_;
    delete over_grpc_;
  }
  void SetUp() override {
    reference_ = reference_parser_.load(kData + "tiny-bge-m3/reference.json");
    served_ = GetParam() ? over_grpc_ : in_process_;
    texts_ = simdjson::to_string(reference_["texts"]);
  }

  static Served* in_process_;
  static Served* over_grpc_;
  Served* served_ = nullptr;
  simdjson::dom::parser parser_, reference_parser_;
  simdjson::dom::element reference_;
  std::string texts_;
};
Served* BgeM3RoutesTest::in_process_ = nullptr;
Served* BgeM3RoutesTest::over_grpc_ = nullptr;

TEST_P(BgeM3RoutesTest, EmbedMultiGivesFlagEmbeddingsThreeOutputs) {
  auto answer = Post(served_->port(), "/embed_multi",
                     R"({"inputs": )" + texts_ + R"(, "dense": true, "sparse": true, "colbert": true})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::element root = parser_.parse(answer.body);
  simdjson::dom::array dense = root["dense"].get_array();
  simdjson::dom::array reference_dense = reference_["dense"].get_array();
  ASSERT_EQ(dense.size(), reference_dense.size());
  for (size_t i = 0; i < dense.size(); ++i) ExpectFloatsNear(Floats(dense.at(i)), reference_dense.at(i), "dense " + std::to_string(i));
  ExpectSparseNear(root["sparse"].get_array(), reference_["sparse"].get_array());
  ExpectColbertNear(root["colbert"].get_array(), reference_["colbert"].get_array(), false);
}

TEST_P(BgeM3RoutesTest, EmbedMultiAnswersOnlyWhatIsAsked) {
  // No output named: the dense vectors alone.
  auto answer = Post(served_->port(), "/embed_multi", R"({"inputs": "berlin"})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::object root = parser_.parse(answer.body).get_object();
  EXPECT_EQ(root.size(), 1u) << answer.body;
  ExpectFloatsNear(Floats(root["dense"].at(0)), reference_["dense"].at(2), "dense of 'berlin'");
  // Naming one asks for that one alone.
  answer = Post(served_->port(), "/embed_multi", R"({"inputs": ["berlin"], "sparse": true})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  root = parser_.parse(answer.body).get_object();
  EXPECT_EQ(root.size(), 1u) << answer.body;
  EXPECT_EQ(root["sparse"].error(), simdjson::SUCCESS);
  answer = Post(served_->port(), "/embed_multi", R"({"inputs": ["berlin"], "colbert": true, "dense": false})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  root = parser_.parse(answer.body).get_object();
  EXPECT_EQ(root.size(), 1u) << answer.body;
  EXPECT_EQ(root["colbert"].at(0).get_array().size(), reference_["colbert"].at(2).get_array().size());

  answer = Post(served_->port(), "/embed_multi", R"({"inputs": ["berlin"], "dense": false})");
  EXPECT_EQ(answer.status, 400) << answer.body;
  EXPECT_NE(answer.body.find("at least one output"), std::string::npos) << answer.body;
  answer = Post(served_->port(), "/embed_multi", R"({"inputs": ["berlin"], "sparse": "yes"})");
  EXPECT_EQ(answer.status, 400) << answer.body;
  answer = Post(served_->port(), "/embed_multi", R"({"inputs": []})");
  EXPECT_EQ(answer.status, 400) << answer.body;
}

TEST_P(BgeM3RoutesTest, EachOutputAloneOnItsOwnRoute) {
  auto answer = Post(served_->port(), "/embed", R"({"inputs": )" + texts_ + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::array dense = parser_.parse(answer.body).get_array();
  simdjson::dom::array reference_dense = reference_["dense"].get_array();
  ASSERT_EQ(dense.size(), reference_dense.size());
  for (size_t i = 0; i < dense.size(); ++i) ExpectFloatsNear(Floats(dense.at(i)), reference_dense.at(i), "/embed " + std::to_string(i));

  answer = Post(served_->port(), "/embed_sparse", R"({"inputs": )" + texts_ + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  ExpectSparseNear(parser_.parse(answer.body).get_array(), reference_["sparse"].get_array());

  for (const bool base64 : {false, true}) {
    answer = Post(served_->port(), "/v1/multi-vector",
                  R"({"input": )" + texts_ + R"(, "embedding_type": ")" + (base64 ? "base64" : "float") + R"("})");
    ASSERT_EQ(answer.status, 200) << answer.body;
    simdjson::dom::element root = parser_.parse(answer.body);
    std::string vectors = "[";
    for (simdjson::dom::element item : root["data"].get_array()) {
      vectors += (vectors.size() > 1 ? "," : "") + simdjson::to_string(item["embeddings"]);
    }
    vectors += "]";
    simdjson::dom::parser vectors_parser;
    ExpectColbertNear(vectors_parser.parse(vectors).get_array(), reference_["colbert"].get_array(), base64);
    int64_t tokens = 0;
    for (simdjson::dom::element ids : reference_["input_ids"].get_array()) tokens += ids.get_array().size();
    EXPECT_EQ(int64_t(root["usage"]["total_tokens"]), tokens);
  }
}

INSTANTIATE_TEST_SUITE_P(InProcessAndGrpc, BgeM3RoutesTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Grpc" : "InProcess"; });

TEST(BgeM3RefusalTest, OtherModelsRefuseEmbedMulti) {
  Served served(kData + "tiny-colbert-bert");
  const auto answer = Post(served.port(), "/embed_multi", R"({"inputs": "a"})");
  EXPECT_EQ(answer.status, 400) << answer.body;
  EXPECT_NE(answer.body.find("not a bge-m3 model"), std::string::npos) << answer.body;
}

TEST(EmbedMultiCallTest, ParsesTheOutputsAsked) {
  auto parsed = ParseEmbedMultiCall(R"({"inputs": ["a", [5, 6]], "sparse": true, "colbert": false, "truncate": true})");
  ASSERT_TRUE(std::holds_alternative<EmbedMultiCall>(parsed));
  const auto& call = std::get<EmbedMultiCall>(parsed);
  EXPECT_EQ(call.inputs.size(), 2u);
  EXPECT_FALSE(call.dense);
  EXPECT_TRUE(call.sparse);
  EXPECT_FALSE(call.colbert);
  EXPECT_EQ(call.truncate, std::optional<bool>(true));
  parsed = ParseEmbedMultiCall(R"({"inputs": "a"})");
  ASSERT_TRUE(std::holds_alternative<EmbedMultiCall>(parsed));
  EXPECT_TRUE(std::get<EmbedMultiCall>(parsed).dense);
  EXPECT_FALSE(std::get<EmbedMultiCall>(parsed).sparse);
  for (const char* bad : {R"({"inputs": "a", "dense": false, "sparse": false})", R"({"dense": true})",
                          R"({"inputs": "a", "colbert": 1})", R"({"inputs": {}})"}) {
    parsed = ParseEmbedMultiCall(bad);
    ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << bad;
    EXPECT_EQ(std::get<ApiError>(parsed).status, 400) << bad;
  }
}

TEST(EmbedMultiBodyTest, WritesEachOutputFromTheTokenRows) {
  // Hidden size 2: each token row is [v0, v1, sparse weight]. Ids 0 (CLS) and 2 (end) are dropped
  // from the sparse output; id 7 twice keeps its larger weight; id 9's zero weight is left out.
  const std::vector<float> rows = {0.6f, 0.8f, 0.5f,  // CLS: the dense vector
                                   1.0f, 0.0f, 0.25f,  // id 7
                                   0.0f, 1.0f, 0.75f,  // id 7
                                   0.0f, -1.0f, 0.0f,  // id 9
                                   0.6f, -0.8f, 0.9f};  // end token
  const std::vector<int32_t> ids = {0, 7, 7, 9, 2};
  const std::vector<int32_t> dropped = {0, 2};
  EmbedMultiCall call;
  call.dense = call.sparse = call.colbert = true;
  const std::string body = EmbedMultiBody(call, {BgeM3Rows{rows.data(), ids}}, 2, dropped);
  EXPECT_EQ(body,
            R"({"dense":[[0.6,0.8]],"sparse":[[{"index":7,"value":0.75}]],"colbert":[[[1,0],[0,1],[0,-1],[0.6,-0.8]]]})");
  call.dense = call.colbert = false;
  EXPECT_EQ(EmbedMultiBody(call, {BgeM3Rows{rows.data(), ids}, BgeM3Rows{rows.data(), ids}}, 2, dropped),
            R"({"sparse":[[{"index":7,"value":0.75}],[{"index":7,"value":0.75}]]})");
}

}  // namespace
}  // namespace stamen::gateway
