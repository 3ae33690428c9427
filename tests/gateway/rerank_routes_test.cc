// The rerank routes over real HTTP (gateway_fixture.h): TEI's /rerank and Cohere's /v1/rerank
// and /v2/rerank sorted by the engine's scores, and yes/no LLM rerankers' template.
#include "tests/gateway/gateway_fixture.h"

namespace stamen::gateway {
namespace {

// Yes/no LLM rerankers (tests/engine/data): the gateway wraps each (query, document) in the
// family's template, so /rerank's raw score is transformers' logit("yes") - logit("no") for the
// ids the model card's code makes of it (Qwen3-Reranker; mxbai-rerank-v2 on Qwen2: "1" - "0"),
// or logit("Yes") alone (bge-reranker-v2-gemma; Gemma 2's soft-capped, with the prompt its
// yes_no_reranker.json names), or bge-reranker-v2.5-gemma2-lightweight's CostWiseGemma head at its
// default cut-off (FlagEmbedding's LightweightLLMReranker.compute_score, the lightweight preset), and
// the normalized scores (/rerank, Cohere's /v1/rerank) are its sigmoid. llama-nemotron-rerank, a
// cross-encoder, takes each pair as its card writes it, "question:{query} \n \n passage:{document}" in
// one text with the tokenizer's begin-of-text token (not the tokenizer's pair encoding, which puts
// that token before each text): its logit, and the sigmoid of it.
class YesNoGatewayTest : public ::testing::TestWithParam<std::string> {};

TEST_P(YesNoGatewayTest, RerankAppliesTheTemplate) {
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/" + GetParam();
  Served served(folder);
  auto golden = engine::WeightStore::OpenFile(folder + "/golden.safetensors");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  // Pairs 0 and 1 of the golden share their query.
  const std::string body = R"({"query": "what is the capital of china?", "texts": ["The capital of China is Beijing.", )"
                           R"("Gravity is a force that attracts two bodies towards each other."])";
  for (const bool raw : {true, false}) {
    auto answer = Post(served.port(), "/rerank", body + (raw ? R"(, "raw_scores": true})" : "}"));
    ASSERT_EQ(answer.status, 200) << answer.body;
    simdjson::dom::parser parser;
    const simdjson::dom::array results = Parse(parser, answer.body).get_array().value();
    ASSERT_EQ(results.size(), 2u);
    for (simdjson::dom::element result : results) {
      const int64_t index = result["index"].get_int64().value();
      auto expected = golden->Load((raw ? "pair_logits_" : "pair_yes_probability_") + std::to_string(index));
      ASSERT_TRUE(expected.ok());
      EXPECT_NEAR(result["score"].get_double().value(), expected->data<float>()[0], 1e-4) << index << " raw " << raw;
    }
  }
  auto answer = Post(served.port(), "/v1/rerank",
                     R"({"model": "m", "query": "explain gravity", "documents": ["Gravity is a force that attracts )"
                     R"(two bodies towards each other."]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser parser;
  auto expected = golden->Load("pair_yes_probability_2");
  ASSERT_TRUE(expected.ok());
  EXPECT_NEAR(Parse(parser, answer.body)["results"].at(0)["relevance_score"].get_double().value(),
              expected->data<float>()[0], 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Models, YesNoGatewayTest,
                         ::testing::Values("tiny-qwen3-reranker", "tiny-qwen2-mxbai-reranker", "tiny-gemma-reranker",
                                           "tiny-gemma2-reranker", "tiny-gemma2-costwise-reranker",
                                           "tiny-llama-bidirectional-reranker"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(GatewayRerankTest, TeiAndCohereRerankSortByScore) {
  // bge-reranker-base shapes with the trimmed XLM-R tokenizer (its ids are below 32,000).
  Served served(server::testing::MakeModel("bge-reranker-base", 32000));
  const std::vector<std::string> documents = {"Paris is the capital of France.", "Bananas are yellow.",
                                              "The Eiffel tower is in Paris.", "Cats sleep a lot."};
  std::vector<double> expected;
  for (const auto& document : documents) expected.push_back(1 / (1 + std::exp(-served.Score("Where is Paris?", document))));
  std::vector<size_t> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return expected[a] > expected[b]; });
  std::string texts = "[";
  for (size_t i = 0; i < documents.size(); ++i) texts += (i ? ",\"" : "\"") + documents[i] + "\"";
  texts += "]";

  simdjson::dom::parser parser;
  auto answer = Post(served.port(), "/rerank", R"({"query": "Where is Paris?", "texts": )" + texts + R"(, "return_text": true})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto results = Parse(parser, answer.body).get_array().value();
  ASSERT_EQ(results.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(results.at(k)["index"].get_int64().value(), static_cast<int64_t>(order[k]));
    EXPECT_NEAR(results.at(k)["score"].get_double().value(), expected[order[k]], 1e-5);
    EXPECT_EQ(std::string_view(results.at(k)["text"].get_string().value()), documents[order[k]]);
  }

  answer = Post(served.port(), "/v1/rerank",
                R"({"model": "m", "query": "Where is Paris?", "documents": [{"text": ")" + documents[0] + R"("}, ")" +
                    documents[1] + R"(", ")" + documents[2] + R"(", ")" + documents[3] + R"("], "top_n": 2, "return_documents": true})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser cohere_parser;
  auto root = Parse(cohere_parser, answer.body);
  auto top = root["results"].get_array().value();
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top.at(0)["index"].get_int64().value(), static_cast<int64_t>(order[0]));
  EXPECT_NEAR(top.at(0)["relevance_score"].get_double().value(), expected[order[0]], 1e-5);
  EXPECT_EQ(std::string_view(top.at(1)["document"]["text"].get_string().value()), documents[order[1]]);
  EXPECT_GT(root["usage"]["total_tokens"].get_int64().value(), 20);

  answer = Post(served.port(), "/rerank", R"({"query": "q", "texts": ["a"], "raw_scores": true})");
  ASSERT_EQ(answer.status, 200);
  simdjson::dom::parser raw_parser;
  EXPECT_NEAR(Parse(raw_parser, answer.body).at(0)["score"].get_double().value(), served.Score("q", "a"), 1e-5);
  EXPECT_EQ(Post(served.port(), "/v1/embeddings", R"({"input": "a"})").status, 400);

  // The same model through /predict: a text, a pair, a batch of both; sigmoid of its one logit.
  answer = Post(served.port(), "/predict", R"({"inputs": "Paris is the capital of France."})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser predict_parser;
  auto predictions = Parse(predict_parser, answer.body).get_array().value();
  ASSERT_EQ(predictions.size(), 1u);
  EXPECT_EQ(std::string_view(predictions.at(0)["label"].get_string().value()), "LABEL_0");
  EXPECT_NEAR(predictions.at(0)["score"].get_double().value(), Sigmoid(served.Logits(documents[0])[0]), 1e-5);
  for (const std::string path : {"/predict", "/", "/invocations"}) {
    answer = Post(served.port(), path, R"({"inputs": [["Where is Paris?", ")" + documents[2] + R"("], ")" + documents[3] + R"("]})");
    ASSERT_EQ(answer.status, 200) << path << ": " << answer.body;
    simdjson::dom::parser batch_parser;
    auto batch = Parse(batch_parser, answer.body).get_array().value();
    ASSERT_EQ(batch.size(), 2u) << answer.body;
    EXPECT_NEAR(batch.at(0).at(0)["score"].get_double().value(), expected[2], 1e-5);
    EXPECT_NEAR(batch.at(1).at(0)["score"].get_double().value(), Sigmoid(served.Logits(documents[3])[0]), 1e-5);
  }
  answer = Post(served.port(), "/predict", R"({"inputs": ["Where is Paris?", ")" + documents[0] + R"("], "raw_scores": true})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser pair_parser;
  EXPECT_NEAR(Parse(pair_parser, answer.body).at(0)["score"].get_double().value(), served.Score("Where is Paris?", documents[0]), 1e-5);
  // POST / with a query is /rerank.
  answer = Post(served.port(), "/", R"({"query": "Where is Paris?", "texts": )" + texts + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser root_parser;
  EXPECT_EQ(Parse(root_parser, answer.body).at(0)["index"].get_int64().value(), static_cast<int64_t>(order[0]));
  // The TEI routes of an embedding model answer in TEI's shape.
  answer = Post(served.port(), "/similarity", R"({"inputs": {"source_sentence": "a", "sentences": ["b"]}})");
  EXPECT_EQ(answer.status, 400);
  EXPECT_NE(answer.body.find("is a reranker, not an embedding model (/similarity)"), std::string::npos) << answer.body;
  ExpectErrorShape("/similarity", 400, answer.body);
  // XLM-R's Unigram tokenizer.json: Hugging Face tokenizers decodes these ids so.
  answer = Post(served.port(), "/decode", R"({"ids": [[0, 18798, 73, 3194, 30, 2]], "skip_special_tokens": false})");
  EXPECT_EQ(answer.body, R"(["<s> Where is Paris?</s>"])");
  answer = Post(served.port(), "/decode", R"({"ids": [0, 18798, 73, 3194, 30, 2]})");
  EXPECT_EQ(answer.body, R"(["Where is Paris?"])");
}

TEST(GatewayRerankTest, CohereV2RerankSortsByScore) {
  Served served(server::testing::MakeModel("bge-reranker-base", 32000));
  const std::vector<std::string> documents = {"Paris is the capital of France.", "Bananas are yellow.",
                                              "The Eiffel tower is in Paris."};
  std::vector<double> expected;
  for (const auto& document : documents) expected.push_back(Sigmoid(served.Score("Where is Paris?", document)));
  std::vector<size_t> order = {0, 1, 2};
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return expected[a] > expected[b]; });
  const auto answer = Post(served.port(), "/v2/rerank",
                           R"({"model": "m", "query": "Where is Paris?", "documents": [")" + documents[0] + R"(", ")" +
                               documents[1] + R"(", ")" + documents[2] + R"("], "top_n": 2, "max_tokens_per_doc": 4096, "priority": 0})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser parser;
  auto root = Parse(parser, answer.body);
  EXPECT_EQ(root["id"].get_string().value().size(), 36u);
  auto results = root["results"].get_array().value();
  ASSERT_EQ(results.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(results.at(k)["index"].get_int64().value(), static_cast<int64_t>(order[k]));
    EXPECT_NEAR(results.at(k)["relevance_score"].get_double().value(), expected[order[k]], 1e-5);
    EXPECT_EQ(results.at(k)["document"].error(), simdjson::NO_SUCH_FIELD);  // v2 answers indices only
  }
  EXPECT_EQ(root["meta"]["billed_units"]["search_units"].get_int64().value(), 1);
  EXPECT_GT(root["meta"]["tokens"]["input_tokens"].get_int64().value(), 20);
  // max_tokens_per_doc: each document cut after its first 2 tokens (XLM-R: "▁Paris", "▁is").
  const auto cut = Post(served.port(), "/v2/rerank",
                        R"({"query": "Where is Paris?", "documents": [")" + documents[0] + R"("], "max_tokens_per_doc": 2})");
  ASSERT_EQ(cut.status, 200) << cut.body;
  simdjson::dom::parser cut_parser;
  const double cut_score = Parse(cut_parser, cut.body)["results"].at(0)["relevance_score"].get_double().value();
  EXPECT_NEAR(cut_score, Sigmoid(served.Score("Where is Paris?", "Paris is")), 1e-5);
  EXPECT_GT(std::abs(cut_score - expected[0]), 1e-6);  // the cut changed the score
  const auto embed = Post(served.port(), "/v2/embed", R"({"texts": ["a"]})");
  EXPECT_EQ(embed.status, 400);
  EXPECT_NE(embed.body.find("is a reranker, not an embedding model (/v2/embed)"), std::string::npos) << embed.body;
  ExpectErrorShape("/v2/embed", 400, embed.body);
}

}  // namespace
}  // namespace stamen::gateway
