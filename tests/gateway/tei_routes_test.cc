// TEI's other routes over real HTTP (gateway_fixture.h): /tokenize, /decode, /info, /health,
// /metrics, POST /, /similarity, /embed_all, /embed_sparse and /predict, compared with the
// engine and tokenizer run directly, and the bounds on their answers.
#include "tests/gateway/gateway_fixture.h"

namespace stamen::gateway {
namespace {

TEST_F(GatewayTest, TokenizeGivesIdsPiecesAndOffsets) {
  const auto answer = Post(served_->port(), "/tokenize", R"({"inputs": ["Hello world"]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto tokens = Parse(parser_, answer.body).at(0).get_array().value();
  const auto ids = served_->Encode("Hello world");
  ASSERT_EQ(tokens.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(tokens.at(i)["id"].get_int64().value(), ids[i]);
  EXPECT_TRUE(tokens.at(0)["special"].get_bool().value());
  EXPECT_EQ(std::string_view(tokens.at(1)["text"].get_string().value()), "hello");
  EXPECT_EQ(tokens.at(1)["start"].get_int64().value(), 0);
  EXPECT_EQ(tokens.at(1)["stop"].get_int64().value(), 5);
  const auto plain = Post(served_->port(), "/tokenize", R"({"inputs": "Hello world", "add_special_tokens": false})");
  EXPECT_EQ(Parse(parser_, plain.body).at(0).get_array().value().size(), ids.size() - 2);
}

TEST_F(GatewayTest, InfoHealthAndMetrics) {
  auto answer = Http(served_->port(), "GET", "/health");
  EXPECT_EQ(answer.status, 200);
  answer = Http(served_->port(), "GET", "/info");
  ASSERT_EQ(answer.status, 200);
  auto info = Parse(parser_, answer.body);
  EXPECT_EQ(info["dimensions"].get_int64().value(), 384);
  EXPECT_EQ(info["max_input_length"].get_int64().value(), 256);
  EXPECT_EQ(std::string_view(info["model_type"]["embedding"]["pooling"].get_string().value()), "mean");
  EXPECT_EQ(info["max_client_batch_size"].get_int64().value(), 8);
  // What the worker's engine runs, not constants of the gateway.
  EXPECT_EQ(std::string_view(info["model_dtype"].get_string().value()), "float32");
  EXPECT_EQ(std::string_view(info["backend"].get_string().value()), "cpu");
  EXPECT_EQ(std::string_view(info["cpu"]["kernels"].get_string().value()), engine::cpu::DetectCpuPath().kernels);
  EXPECT_EQ(std::string_view(info["cpu"]["gemm"].get_string().value()), engine::cpu::DescribeGemm(false));
  EXPECT_EQ(std::string_view(info["version"].get_string().value()), STAMEN_VERSION);
  Post(served_->port(), "/v1/embeddings", R"({"input": "count me"})");
  answer = Http(served_->port(), "GET", "/metrics");
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.Header("content-type"), "text/plain; version=0.0.4");
  EXPECT_NE(answer.body.find("stamen_gateway_responses_total{route=\"/v1/embeddings\",status=\"200\"}"), std::string::npos);
  EXPECT_NE(answer.body.find("stamen_batch_tokens_bucket"), std::string::npos);  // the worker's, same registry
}

TEST_F(GatewayTest, TeiHealthRoutesAndRootEmbed) {
  for (const std::string path : {"/", "/ping", "/health", "/ready", "/live"}) {
    const auto answer = Http(served_->port(), "GET", path);
    EXPECT_EQ(answer.status, 200) << path;
    EXPECT_EQ(answer.body, R"({"status":"ok"})") << path;
  }
  // POST / and /invocations on an embedding model are /embed.
  for (const std::string path : {"/", "/invocations"}) {
    const auto answer = Post(served_->port(), path, R"({"inputs": ["one", "two words"], "normalize": false})");
    ASSERT_EQ(answer.status, 200) << path << ": " << answer.body;
    simdjson::dom::parser parser;
    auto rows = Parse(parser, answer.body).get_array().value();
    ASSERT_EQ(rows.size(), 2u);
    ExpectNear(Floats(rows.at(1).value()), served_->Embed(served_->Encode("two words"), {}, false), 1e-4);
  }
}

TEST_F(GatewayTest, SimilarityIsTheCosineOfTheEngineVectors) {
  const std::string source = "A man is eating food.";
  const std::vector<std::string> sentences = {"A man is eating a piece of bread.", "The girl is carrying a baby.",
                                              "A man is riding a horse."};
  const auto reference = served_->Embed(served_->Encode(source));
  const std::string body = R"({"inputs": {"source_sentence": ")" + source + R"(", "sentences": [")" + sentences[0] +
                           R"(", ")" + sentences[1] + R"(", ")" + sentences[2] + R"("]}, "parameters": {}})";
  for (const std::string path : {"/similarity", "/"}) {
    const auto answer = Post(served_->port(), path, body);
    ASSERT_EQ(answer.status, 200) << path << ": " << answer.body;
    simdjson::dom::parser parser;
    auto scores = Floats(Parse(parser, answer.body));
    ASSERT_EQ(scores.size(), sentences.size());
    for (size_t i = 0; i < sentences.size(); ++i) {
      EXPECT_NEAR(scores[i], Cosine(reference, served_->Embed(served_->Encode(sentences[i]))), 1e-5) << path << " " << i;
    }
  }
  // Truncation is one of TEI's "parameters".
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "word" + std::to_string(i % 7) + " ";
  const std::string long_body = R"({"inputs": {"source_sentence": "short", "sentences": [")" + long_text + R"("]})";
  auto answer = Post(served_->port(), "/similarity", long_body + "}");
  EXPECT_EQ(answer.status, 422) << answer.body;
  ExpectErrorShapeOf("/similarity", answer);
  answer = Post(served_->port(), "/similarity", long_body + R"(, "parameters": {"truncate": true}})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser parser;
  EXPECT_NEAR(Floats(Parse(parser, answer.body))[0],
              Cosine(served_->Embed(served_->Encode("short")), served_->Embed(served_->Encode(long_text, 256))), 1e-5);
}

// An /embed_all answer over --max-token-states floats is a 413 before any work is queued.
TEST(GatewayLimitsTest, EmbedAllAnswersAreBounded) {
  GatewayOptions options;
  options.max_token_states = 10 * 384;  // ten token vectors of this model
  Served served(Embedder(), options);
  EXPECT_EQ(Post(served.port(), "/embed_all", R"({"inputs": "a b c"})").status, 200);  // 5 tokens
  const auto refused = Post(served.port(), "/embed_all", R"({"inputs": ["a b c d e", "f g h i j"]})");  // 14
  EXPECT_EQ(refused.status, 413);
  EXPECT_NE(refused.body.find("14 token vectors of 384 floats"), std::string::npos) << refused.body;
}

// A /tokenize answer listing more than --max-tokenize-tokens tokens is a 413 in TEI's shape
// (a 13 MB body once got a 470 MB answer).
TEST(GatewayLimitsTest, TokenizeAnswersAreBounded) {
  GatewayOptions options;
  options.max_tokenize_tokens = 10;
  Served served(Embedder(), options);
  EXPECT_EQ(Post(served.port(), "/tokenize", R"({"inputs": "a b c"})").status, 200);  // 5 tokens
  // 7 + 7 tokens: refused at the second input by its words, before it is tokenized (7 + 5).
  auto refused = Post(served.port(), "/tokenize", R"({"inputs": ["a b c d e", "f g h i j"]})");
  EXPECT_EQ(refused.status, 413);
  EXPECT_NE(refused.body.find("/tokenize would answer at least 12 tokens (with input 1), more than "
                              "--max-tokenize-tokens 10"), std::string::npos) << refused.body;
  ExpectErrorShape("/tokenize", 413, refused.body);
  // One input of one word and 40 tokens (BERT splits punctuation): past the words bound, counted
  // as bare ids and refused before its tokens are listed.
  refused = Post(served.port(), "/tokenize", R"({"inputs": ")" + std::string(40, '!') + R"("})");
  EXPECT_EQ(refused.status, 413) << refused.body;
  EXPECT_NE(refused.body.find("at least 42 tokens (with input 0)"), std::string::npos) << refused.body;
  // Without special tokens, ten fit.
  EXPECT_EQ(Post(served.port(), "/tokenize", R"({"inputs": "a b c d e f g h i j", "add_special_tokens": false})").status,
            200);
}

TEST_F(GatewayTest, EmbedAllGivesEveryTokensHiddenState) {
  const auto answer = Post(served_->port(), "/embed_all", R"({"inputs": ["Hello world", "The cat sat"]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto inputs = Parse(parser_, answer.body).get_array().value();
  ASSERT_EQ(inputs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto ids = served_->Encode(i == 0 ? "Hello world" : "The cat sat");
    const engine::Tensor states = served_->TokenStates(ids);
    auto tokens = inputs.at(i).get_array().value();
    ASSERT_EQ(tokens.size(), ids.size());
    for (size_t t = 0; t < ids.size(); ++t) {
      const float* row = states.data<float>() + t * states.dim(1);
      ExpectNear(Floats(tokens.at(t)), std::vector<float>(row, row + states.dim(1)));
    }
  }
  // Not a SPLADE model: /embed_sparse says so.
  const auto sparse = Post(served_->port(), "/embed_sparse", R"({"inputs": "Hello"})");
  EXPECT_EQ(sparse.status, 400);
  EXPECT_NE(sparse.body.find("no SPLADE pooling"), std::string::npos) << sparse.body;
}

TEST_F(GatewayTest, DecodeGivesTheTextsOfIds) {
  // Hugging Face tokenizers' decode of the same ids (bert-base-uncased's tokenizer.json).
  const auto ids = served_->Encode("Hello world, this is stamen.");
  std::string ids_json;
  for (size_t i = 0; i < ids.size(); ++i) ids_json += (i ? "," : "") + std::to_string(ids[i]);
  auto answer = Post(served_->port(), "/decode", R"({"ids": [)" + ids_json + "]}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.body, R"(["hello world, this is stamen."])");
  answer = Post(served_->port(), "/decode", R"({"ids": [[)" + ids_json + R"(], [101, 2123, 1005, 1056, 6634, 999, 102]], "skip_special_tokens": false})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.body, R"(["[CLS] hello world, this is stamen. [SEP]","[CLS] don ' t panic! [SEP]"])");
}

TEST(GatewayClassifierTest, PredictIsTheSoftmaxOverLabelsSortedByScore) {
  Served served(ThreeLabelClassifier());
  const std::vector<std::pair<std::string, std::optional<std::string>>> inputs = {
      {"I loved this film.", std::nullopt}, {"The premise is true.", "The conclusion follows."}};
  simdjson::dom::parser parser;
  auto answer = Post(served.port(), "/predict", R"({"inputs": ["I loved this film.", ["The premise is true.", "The conclusion follows."]]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto batch = Parse(parser, answer.body).get_array().value();
  ASSERT_EQ(batch.size(), 2u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float> logits = served.Logits(inputs[i].first, inputs[i].second);
    ASSERT_EQ(logits.size(), 3u);
    double sum = 0;
    for (float logit : logits) sum += std::exp(double(logit));
    std::vector<size_t> order = {0, 1, 2};
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
    auto predictions = batch.at(i).get_array().value();
    ASSERT_EQ(predictions.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(std::string_view(predictions.at(k)["label"].get_string().value()), "LABEL_" + std::to_string(order[k]));
      EXPECT_NEAR(predictions.at(k)["score"].get_double().value(), std::exp(double(logits[order[k]])) / sum, 1e-5);
    }
  }
  // raw_scores: the logits; POST / of a classifier is /predict.
  answer = Post(served.port(), "/", R"({"inputs": "I loved this film.", "raw_scores": true})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser raw_parser;
  auto raw = Parse(raw_parser, answer.body).get_array().value();
  const std::vector<float> logits = served.Logits("I loved this film.");
  const float largest = *std::max_element(logits.begin(), logits.end());
  EXPECT_NEAR(raw.at(0)["score"].get_double().value(), largest, 1e-5);
  // Reranking needs one label.
  answer = Post(served.port(), "/rerank", R"({"query": "q", "texts": ["a"]})");
  EXPECT_EQ(answer.status, 400);
  EXPECT_NE(answer.body.find("has 3 labels"), std::string::npos) << answer.body;
  ExpectErrorShape("/rerank", 400, answer.body);
  // Over-long input: 422 unless truncated; truncation_direction "left" only for single texts.
  std::string long_text;
  for (int i = 0; i < 600; ++i) long_text += "word ";
  answer = Post(served.port(), "/predict", R"({"inputs": ")" + long_text + R"("})");
  EXPECT_EQ(answer.status, 422) << answer.body;
  EXPECT_NE(answer.body.find("input 0 has 602 tokens; the model takes at most 512"), std::string::npos) << answer.body;
  ExpectErrorShape("/predict", 422, answer.body);
  EXPECT_EQ(Post(served.port(), "/predict", R"({"inputs": ")" + long_text + R"(", "truncate": true, "truncation_direction": "left"})").status, 200);
  answer = Post(served.port(), "/predict", R"({"inputs": ["a", "b"], "truncation_direction": "left"})");
  EXPECT_EQ(answer.status, 400);
  ExpectErrorShape("/predict", 400, answer.body);
  const std::vector<ErrorCase> cases = {
      {"/predict", "{}", 400, "missing 'inputs'"},
      {"/predict", R"({"inputs": 5})", 400, "'inputs' must be a string, not a number"},
      {"/predict", R"({"inputs": []})", 400, "'inputs' is empty"},
      {"/predict", R"({"inputs": [["a"]]})", 400, "'inputs'[0] must be a string or a pair [a, b] of strings"},
      {"/predict", R"({"inputs": [["a", 1]]})", 400, "'inputs'[0][1] must be a string"},
      {"/predict", R"({"inputs": ["a", ""]})", 400, "'inputs'[1] is an empty string"},
      {"/predict", R"({"inputs": "a", "raw_scores": "yes"})", 400, "'raw_scores' must be a boolean"},
      {"/embed", R"({"inputs": "a"})", 400, "is a classifier, not an embedding model (/embed): use /predict"},
  };
  for (const ErrorCase& error : cases) {
    answer = Post(served.port(), error.path, error.body);
    EXPECT_EQ(answer.status, error.status) << error.body << ": " << answer.body;
    EXPECT_NE(answer.body.find(error.message), std::string::npos) << answer.body;
    ExpectErrorShape(error.path, error.status, answer.body);
  }
}

// A SPLADE model (BertForMaskedLM, random weights checked against transformers in the engine's
// golden tests) with a WordPiece vocabulary written here: /embed_sparse and POST / answer each
// input's non-zero SPLADE entries, as the engine computes them.
TEST(GatewaySparseTest, EmbedSparseGivesTheNonZeroEntriesOfTheSpladeVector) {
  const std::string folder = server::testing::ScratchFolder() + "/sparse-bert";
  std::filesystem::create_directories(folder);
  const std::string golden = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-bert-splade/";
  for (const char* file : {"config.json", "model.safetensors"}) {
    std::filesystem::copy_file(golden + file, folder + "/" + file, std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream vocabulary(folder + "/vocab.txt");
  vocabulary << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int i = 5; i < 1000; ++i) vocabulary << "w" << i << "\n";
  vocabulary.close();
  Served served(folder);
  simdjson::dom::parser parser;
  for (const char* route : {"/embed_sparse", "/"}) {
    const auto answer = Post(served.port(), route, R"({"inputs": ["w7 w8 w9", "w500"]})");
    ASSERT_EQ(answer.status, 200) << route << ": " << answer.body;
    auto inputs = Parse(parser, answer.body).get_array().value();
    ASSERT_EQ(inputs.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const auto expected = served.Embed(served.Encode(i == 0 ? "w7 w8 w9" : "w500"),
                                         {.pooling = engine::ops::PoolingMode::kSplade});
      auto entries = inputs.at(i).get_array().value();
      size_t entry = 0;
      for (size_t index = 0; index < expected.size(); ++index) {
        if (expected[index] == 0.0f) continue;
        ASSERT_LT(entry, entries.size());
        EXPECT_EQ(entries.at(entry)["index"].get_int64().value(), static_cast<int64_t>(index));
        EXPECT_NEAR(entries.at(entry)["value"].get_double().value(), expected[index], 1e-5);
        ++entry;
      }
      EXPECT_EQ(entry, entries.size()) << route;
      EXPECT_GT(entry, 0u);
    }
  }
}

TEST(TeiApiTest, PredictInputsAreReadAsTeiReadsThem) {
  auto sequences = [](const std::string& body) {
    auto parsed = ParsePredictCall(body);
    EXPECT_TRUE(std::holds_alternative<PredictCall>(parsed)) << body;
    const PredictCall call = std::get<PredictCall>(parsed);
    std::string shape = call.batch ? "batch:" : "single:";
    for (const auto& sequence : call.sequences) shape += " " + sequence.first + (sequence.second ? "+" + *sequence.second : "");
    return shape;
  };
  EXPECT_EQ(sequences(R"({"inputs": "a"})"), "single: a");
  EXPECT_EQ(sequences(R"({"inputs": ["a", "b"]})"), "single: a+b");  // two strings are a pair
  EXPECT_EQ(sequences(R"({"inputs": ["a"]})"), "batch: a");
  EXPECT_EQ(sequences(R"({"inputs": ["a", "b", "c"]})"), "batch: a b c");
  EXPECT_EQ(sequences(R"({"inputs": [["a", "b"], "c"]})"), "batch: a+b c");
  // huggingface_hub's text_classification sends "parameters", which TEI ignores.
  EXPECT_EQ(sequences(R"({"inputs": "a", "parameters": {"top_k": 2}})"), "single: a");
}

TEST(TeiApiTest, RootTaskFollowsTheModelAndTheBody) {
  EXPECT_EQ(RootTask(ModelKind::kEmbedding, R"({"inputs": "a"})"), TeiTask::kEmbed);
  EXPECT_EQ(RootTask(ModelKind::kEmbedding, R"({"inputs": {"source_sentence": "a", "sentences": ["b"]}})"), TeiTask::kSimilarity);
  EXPECT_EQ(RootTask(ModelKind::kEmbedding, "not json"), TeiTask::kEmbed);
  EXPECT_EQ(RootTask(ModelKind::kReranker, R"({"query": "q", "texts": ["a"]})"), TeiTask::kRerank);
  EXPECT_EQ(RootTask(ModelKind::kReranker, R"({"inputs": "a", "parameters": {}})"), TeiTask::kPredict);
  EXPECT_EQ(RootTask(ModelKind::kReranker, "{}"), TeiTask::kRerank);
  EXPECT_EQ(RootTask(ModelKind::kClassifier, R"({"query": "q"})"), TeiTask::kPredict);
}

}  // namespace
}  // namespace stamen::gateway
