// The response writers of the routes that compute (api.cc, tei_api.cc, cohere_api.cc,
// bge_m3_outputs.cc), as pure functions of a parsed call and a finished job's rows built here
// by hand: each answer against the shape its API documents (shared/docs/api.md, TEI's
// openapi.json, Cohere's v2 reference), without a server or a worker.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gateway/api.h"
#include "gateway/bge_m3_outputs.h"
#include "gateway/cohere_api.h"
#include "gateway/tei_api.h"

namespace stamen::gateway {
namespace {

// Rows of `columns` floats, one input per entry of `rows_per_input`, with `lengths` tokens each
// (ids 100, 101, … end to end).
struct Rows {
  std::vector<float> values;
  size_t columns = 0;
  std::vector<int64_t> offsets;
  std::vector<int32_t> ids;
  std::vector<int32_t> lengths;

  Rows(std::vector<float> values, size_t columns, std::vector<int64_t> rows_per_input, std::vector<int32_t> lengths)
      : values(std::move(values)), columns(columns), lengths(std::move(lengths)) {
    offsets.push_back(0);
    for (int64_t count : rows_per_input) offsets.push_back(offsets.back() + count);
    for (int32_t length : this->lengths) {
      for (int32_t token = 0; token < length; ++token) ids.push_back(100 + static_cast<int32_t>(ids.size()));
    }
  }
  FinishedRows View() const { return {values.data(), columns, offsets, ids, lengths}; }
};

// One row per input.
Rows OneRowEach(std::vector<float> values, size_t columns, std::vector<int32_t> lengths) {
  std::vector<int64_t> rows_per_input(lengths.size(), 1);
  return Rows(std::move(values), columns, std::move(rows_per_input), std::move(lengths));
}

TEST(AnswersTest, OpenAiEmbeddingsListEachInputWithUsageAndTheNamedModel) {
  const Rows rows = OneRowEach({0.5f, -0.25f, 1, 0}, 2, {3, 4});
  EmbedCall call;
  call.model = "asked-for";
  EXPECT_EQ(EmbeddingsBody(call, /*openai=*/true, "served", rows.View(), {}),
            "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,\"embedding\":[0.5,-0.25]},"
            "{\"object\":\"embedding\",\"index\":1,\"embedding\":[1,0]}],\"model\":\"asked-for\","
            "\"usage\":{\"prompt_tokens\":7,\"total_tokens\":7}}");
  call.model.clear();
  EXPECT_NE(EmbeddingsBody(call, true, "served", rows.View(), {}).find("\"model\":\"served\""), std::string::npos);
}

TEST(AnswersTest, TeiEmbedIsAnArrayOfVectorsInTheAskedType) {
  const Rows rows = OneRowEach({0.5f, -0.25f, -1, 0.5f}, 2, {3, 4});
  EmbedCall call;
  EXPECT_EQ(EmbeddingsBody(call, /*openai=*/false, "served", rows.View(), {}), "[[0.5,-0.25],[-1,0.5]]");
  // numpy.packbits(v > 0) − 128: bits 10 → 128 − 128, bits 01 → 64 − 128.
  call.encoding = EmbeddingType::kBinary;
  EXPECT_EQ(EmbeddingsBody(call, false, "served", rows.View(), {}), "[[0],[-64]]");
}

TEST(AnswersTest, LateChunksAnswerEachChunkRowWithItsSpanWhenARuleCutThem) {
  // Input 0 has chunks at rows 2 and 0, input 1 one chunk at row 1.
  const Rows rows = OneRowEach({1, 0, 0, 1, 0.5f, 0.5f}, 2, {2, 2, 2});
  LateChunks late{.chunks = {{{0, 5}, {6, 9}}, {{0, 3}}}, .rows = {{2, 0}, {1}}};
  EmbedCall call;
  EXPECT_EQ(EmbeddingsBody(call, false, "m", rows.View(), late), "[[[0.5,0.5],[1,0]],[[0,1]]]");
  call.chunking = ChunkingRule{.sentences = true};
  EXPECT_EQ(EmbeddingsBody(call, false, "m", rows.View(), late),
            "[[{\"chunk\":[0,5],\"embedding\":[0.5,0.5]},{\"chunk\":[6,9],\"embedding\":[1,0]}],"
            "[{\"chunk\":[0,3],\"embedding\":[0,1]}]]");
  const std::string openai = EmbeddingsBody(call, true, "m", rows.View(), late);
  EXPECT_NE(openai.find("{\"object\":\"embedding\",\"index\":2,\"input_index\":1,\"chunk\":[0,3],\"embedding\":[0,1]}"),
            std::string::npos) << openai;
}

TEST(AnswersTest, RerankScoresAreSigmoidsOfTheFirstLogitUnlessRaw) {
  const Rows rows = OneRowEach({0, 9, 2, 9, -1, 9}, 2, {4, 4, 4});
  const std::vector<double> sigmoid = RerankScores(rows.View(), false);
  ASSERT_EQ(sigmoid.size(), 3u);
  EXPECT_DOUBLE_EQ(sigmoid[0], 0.5);
  EXPECT_NEAR(sigmoid[1], 1 / (1 + std::exp(-2.0)), 1e-12);
  EXPECT_NEAR(sigmoid[2], 1 / (1 + std::exp(1.0)), 1e-12);
  EXPECT_EQ(RerankScores(rows.View(), true), (std::vector<double>{0, 2, -1}));
}

TEST(AnswersTest, MaxSimScoresAreEachDocumentsRowAfterTheQuery) {
  // The query (input 0) has no score row of its own in this view's terms: one row each.
  const Rows rows = OneRowEach({0, 3.5f, 1.25f}, 1, {5, 3, 2});
  EXPECT_EQ(MaxSimScores(rows.View()), (std::vector<double>{3.5, 1.25}));
}

TEST(AnswersTest, RerankBodiesOrderBestFirstInEachApisShape) {
  RerankCall call;
  call.documents = {"low", "high", "mid"};
  const std::vector<double> scores = {0.25, 0.75, 0.5};
  EXPECT_EQ(RerankBody(call, RerankShape::kTei, "m", scores, 12),
            "[{\"index\":1,\"score\":0.75},{\"index\":2,\"score\":0.5},{\"index\":0,\"score\":0.25}]");
  call.top_n = 1;
  call.return_documents = true;
  EXPECT_EQ(RerankBody(call, RerankShape::kTei, "m", scores, 12), "[{\"index\":1,\"score\":0.75,\"text\":\"high\"}]");
  EXPECT_EQ(RerankBody(call, RerankShape::kCohereV1, "m", scores, 12),
            "{\"model\":\"m\",\"results\":[{\"index\":1,\"relevance_score\":0.75,\"document\":{\"text\":\"high\"}}],"
            "\"usage\":{\"total_tokens\":12}}");
  const std::string v2 = RerankBody(call, RerankShape::kCohereV2, "m", scores, 12);
  EXPECT_EQ(v2.rfind("{\"id\":\"", 0), 0u) << v2;
  EXPECT_NE(v2.find("\"results\":[{\"index\":1,\"relevance_score\":0.75,\"document\":{\"text\":\"high\"}}]"),
            std::string::npos) << v2;
  EXPECT_NE(v2.find("\"billed_units\":{\"search_units\":1}"), std::string::npos) << v2;
}

TEST(AnswersTest, RerankTiesKeepTheDocumentsOrder) {
  RerankCall call;
  call.documents = {"a", "b", "c"};
  EXPECT_EQ(RerankBody(call, RerankShape::kTei, "m", {0.5, 0.5, 0.5}, 3),
            "[{\"index\":0,\"score\":0.5},{\"index\":1,\"score\":0.5},{\"index\":2,\"score\":0.5}]");
}

TEST(AnswersTest, PredictNamesEachLabelBySoftmaxAndRefusesRowsOfTheWrongWidth) {
  const std::vector<std::string> labels = {"negative", "positive"};
  const Rows rows = OneRowEach({0, 0, 1, -1}, 2, {3, 3});
  PredictCall call;
  call.batch = true;
  auto body = PredictBody(call, rows.View(), labels);
  ASSERT_TRUE(std::holds_alternative<std::string>(body));
  // Softmax of (1, −1), in double as the writer computes it.
  const float high = static_cast<float>(std::exp(2.0) / (std::exp(2.0) + 1));
  const float low = static_cast<float>(1 / (std::exp(2.0) + 1));
  std::string expected = "[[{\"score\":0.5,\"label\":\"negative\"},{\"score\":0.5,\"label\":\"positive\"}],"
                         "[{\"score\":";
  AppendFloat(expected, high);
  expected += ",\"label\":\"negative\"},{\"score\":";
  AppendFloat(expected, low);
  expected += ",\"label\":\"positive\"}]]";
  EXPECT_EQ(std::get<std::string>(body), expected);

  call.batch = false;
  call.raw_scores = true;
  const Rows one = OneRowEach({-2, 3}, 2, {3});
  EXPECT_EQ(std::get<std::string>(PredictBody(call, one.View(), labels)),
            "[{\"score\":3,\"label\":\"positive\"},{\"score\":-2,\"label\":\"negative\"}]");

  const std::vector<std::string> three = {"a", "b", "c"};
  auto error = PredictBody(call, one.View(), three);
  ASSERT_TRUE(std::holds_alternative<ApiError>(error));
  EXPECT_EQ(std::get<ApiError>(error).status, 500);
}

TEST(AnswersTest, SimilarityIsEachSentencesCosineWithTheSource) {
  const Rows rows = OneRowEach({1, 0, 0, 2, 3, 3, 0, 0}, 2, {2, 2, 2, 2});
  std::string expected = "[0,";
  AppendFloat(expected, Cosine(rows.values.data(), rows.values.data() + 4, 2));
  expected += ",0]";
  EXPECT_EQ(SimilarityBody(rows.View()), expected);
  EXPECT_NEAR(Cosine(rows.values.data(), rows.values.data() + 4, 2), std::sqrt(0.5), 1e-6);
}

TEST(AnswersTest, EmbedAllGivesEveryTokensRowPerInput) {
  const Rows rows({1, 2, 3, 4, 5, 6}, 2, {2, 1}, {2, 1});
  EXPECT_EQ(EmbedAllBody(rows.View()), "[[[1,2],[3,4]],[[5,6]]]");
}

TEST(AnswersTest, SpladeSparseListsTheNonZeroEntriesById) {
  const Rows rows = OneRowEach({0, 1.5f, 0, 0.25f, 0, 0, 0, 0}, 4, {3, 2});
  EXPECT_EQ(SpladeSparseBody(rows.View()), "[[{\"index\":1,\"value\":1.5},{\"index\":3,\"value\":0.25}],[]]");
}

TEST(AnswersTest, CohereEmbedAnswersEachTypeAskedInOrderWithTheTexts) {
  const Rows rows = OneRowEach({0.5f, -0.5f, -1, 1}, 2, {3, 2});
  CohereEmbedCall call;
  call.texts = {"a", "b\"c"};
  call.embedding_types = {EmbeddingType::kFloat, EmbeddingType::kUbinary};
  const std::string body = CohereEmbedBody(call, rows.View());
  EXPECT_NE(body.find("\"embeddings\":{\"float\":[[0.5,-0.5],[-1,1]],\"ubinary\":[[128],[64]]}"), std::string::npos)
      << body;
  EXPECT_NE(body.find("\"texts\":[\"a\",\"b\\\"c\"]"), std::string::npos) << body;
  EXPECT_NE(body.find("\"billed_units\":{\"input_tokens\":5}"), std::string::npos) << body;
  EXPECT_NE(body.find("\"response_type\":\"embeddings_by_type\"}"), std::string::npos) << body;
}

TEST(AnswersTest, BgeM3SparseReadsEachInputsRowsAndIds) {
  // bge-m3's token rows are the hidden size (1 here) plus the sparse weight; ids 100.. end to end.
  const Rows rows({0, 0.5f, 0, 0, 0, 0.25f, 0, 0.75f}, 2, {2, 2}, {2, 2});
  // Input 0: ids 100 (0.5), 101 (0); input 1: ids 102 (0.25), 103 (0.75); 103 is dropped.
  const std::vector<int32_t> dropped = {103};
  EXPECT_EQ(BgeM3SparseBody(rows.View(), 1, dropped),
            "[[{\"index\":100,\"value\":0.5}],[{\"index\":102,\"value\":0.25}]]");
}

}  // namespace
}  // namespace stamen::gateway
