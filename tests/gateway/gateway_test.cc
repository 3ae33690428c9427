// `stamen serve`'s gateway over real HTTP on loopback, with an in-process worker on a
// one-layer random model that has the real all-MiniLM-L6-v2 (WordPiece) or XLM-R tokenizer:
// every route and input shape of ../shared/docs/api.md, answers compared with the engine and
// tokenizer run directly in the test, and every error class with its status and message.
#include "gateway/gateway.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>

#include "engine/cpu/cpu_path.h"
#include "engine/engine.h"
#include "engine/model_tokenizer.h"
#include "server/local_worker.h"
#include "tests/gateway/http_client.h"
#include "tests/gateway/base64_floats.h"
#include "tests/server/test_models.h"

namespace stamen::gateway {
namespace {

using testing::Http;
using testing::Post;
using testing::DecodeBase64Floats;

// A gateway with an in-process worker on `model_dir`, and the engine and tokenizer alone.
class Served {
 public:
  explicit Served(const std::string& model_dir, GatewayOptions options = {}) {
    server::LocalWorkerOptions worker_options;
    worker_options.model_dir = model_dir;
    worker_options.scheduler = {.max_batch_tokens = 512, .max_batch_sequences = 64, .max_queued_tokens = 1 << 20};
    worker_options.engine.num_threads = 1;
    auto worker = server::LocalWorker::Load(worker_options, registry_);
    EXPECT_TRUE(worker.ok()) << worker.status().message();
    worker_ = std::move(worker.value());
    options.model_dir = model_dir;
    options.port = 0;
    options.tokenization_workers = 2;
    options.in_process_worker = std::make_shared<InProcessBackend>(*worker_);
    options.dispatcher.chunk_tokens = 512;
    auto gateway = Gateway::Start(options, registry_);
    EXPECT_TRUE(gateway.ok()) << gateway.status().message();
    gateway_ = std::move(gateway.value());
    auto engine = engine::Engine::Load(model_dir, {.num_threads = 1});
    EXPECT_TRUE(engine.ok());
    engine_ = std::move(engine.value());
    auto tokenizer = engine::ModelTokenizer::Load(model_dir, engine_->config());
    EXPECT_TRUE(tokenizer.ok());
    tokenizer_ = std::move(tokenizer.value());
  }
  ~Served() { gateway_->Shutdown(std::chrono::seconds(5)); }

  int port() const { return gateway_->port(); }
  std::vector<int32_t> Encode(const std::string& text, size_t limit = 0,
                              tokenizer::TruncationSide side = tokenizer::TruncationSide::kRight) {
    std::vector<int32_t> ids;
    tokenizer_->Encode(text, limit, &ids, side);
    return ids;
  }
  // The engine's vector for `ids` alone.
  std::vector<float> Embed(const std::vector<int32_t>& ids, engine::StepOptions step = {}) {
    const std::vector<int32_t> cu_seqlens = {0, static_cast<int32_t>(ids.size())};
    auto result = engine_->Step({ids, cu_seqlens, {}}, step);
    EXPECT_TRUE(result.ok() && result->Wait().ok());
    auto row = result->Row(0);
    return {row.begin(), row.end()};
  }
  float Score(const std::string& query, const std::string& document) {
    std::vector<int32_t> ids, types;
    tokenizer_->EncodePair(query, document, 0, &ids, &types);
    const std::vector<int32_t> cu_seqlens = {0, static_cast<int32_t>(ids.size())};
    auto result = engine_->Step({ids, cu_seqlens, {}}, {.output = engine::StepOutput::kScores});
    EXPECT_TRUE(result.ok() && result->Wait().ok());
    return result->Row(0)[0];
  }
  metrics::Registry& registry() { return registry_; }

 private:
  metrics::Registry registry_;
  std::unique_ptr<server::LocalWorker> worker_;
  std::unique_ptr<Gateway> gateway_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<engine::ModelTokenizer> tokenizer_;
};

std::string Embedder() { return server::testing::MakeModel("all-MiniLM-L6-v2", 30522); }

simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& body) {
  simdjson::dom::element root;
  EXPECT_EQ(parser.parse(body).get(root), simdjson::SUCCESS) << body;
  return root;
}

std::vector<float> Floats(simdjson::dom::element element) {
  // A named array: iterating `get_array().value()` would iterate a temporary that is gone.
  simdjson::dom::array array;
  EXPECT_EQ(element.get(array), simdjson::SUCCESS);
  std::vector<float> values;
  for (simdjson::dom::element value : array) values.push_back(static_cast<float>(value.get_double().value()));
  return values;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected, double tolerance = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) ASSERT_NEAR(actual[i], expected[i], tolerance) << "component " << i;
}

std::vector<float> Renormalized(std::vector<float> values, size_t keep) {
  values.resize(keep);
  double squares = 0;
  for (float v : values) squares += double(v) * v;
  for (float& v : values) v = static_cast<float>(v / std::sqrt(squares));
  return values;
}

class GatewayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { served_ = new Served(Embedder(), Options()); }
  static void TearDownTestSuite() { delete served_; }
  static GatewayOptions Options() {
    GatewayOptions options;
    options.max_client_batch_size = 8;
    options.payload_limit = 64 * 1024;
    return options;
  }
  static Served* served_;
  simdjson::dom::parser parser_;
};
Served* GatewayTest::served_ = nullptr;

TEST_F(GatewayTest, OpenAIEmbeddingsMatchTheEngine) {
  const auto answer = Post(served_->port(), "/v1/embeddings",
                           R"({"input": ["Hello world", "A second, longer input text."], "model": "my-model"})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.Header("content-type"), "application/json");
  for (const char* header : {"x-total-time", "x-tokenization-time", "x-queue-time", "x-inference-time"}) {
    EXPECT_FALSE(answer.Header(header).empty()) << header;
  }
  auto root = Parse(parser_, answer.body);
  EXPECT_EQ(std::string_view(root["object"].get_string().value()), "list");
  EXPECT_EQ(std::string_view(root["model"].get_string().value()), "my-model");
  auto data = root["data"].get_array().value();
  ASSERT_EQ(data.size(), 2u);
  const std::vector<std::string> texts = {"Hello world", "A second, longer input text."};
  size_t tokens = 0;
  for (size_t i = 0; i < 2; ++i) {
    auto item = data.at(i).value();
    EXPECT_EQ(std::string_view(item["object"].get_string().value()), "embedding");
    EXPECT_EQ(item["index"].get_int64().value(), static_cast<int64_t>(i));
    const auto ids = served_->Encode(texts[i]);
    tokens += ids.size();
    ExpectNear(Floats(item["embedding"].value()), served_->Embed(ids));
  }
  EXPECT_EQ(root["usage"]["prompt_tokens"].get_int64().value(), static_cast<int64_t>(tokens));
  EXPECT_EQ(root["usage"]["total_tokens"].get_int64().value(), static_cast<int64_t>(tokens));
}

TEST_F(GatewayTest, Base64DecodesToTheSameFloats) {
  const std::string input = R"("input": ["The quick brown fox", "jumps"])";
  const auto as_float = Post(served_->port(), "/embeddings", "{" + input + R"(, "encoding_format": "float"})");
  const auto as_base64 = Post(served_->port(), "/v1/embeddings", "{" + input + R"(, "encoding_format": "base64"})");
  ASSERT_EQ(as_float.status, 200);
  ASSERT_EQ(as_base64.status, 200) << as_base64.body;
  simdjson::dom::parser other;
  auto floats = Parse(parser_, as_float.body)["data"].get_array().value();
  auto encoded = Parse(other, as_base64.body)["data"].get_array().value();
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<float> decoded = DecodeBase64Floats(encoded.at(i)["embedding"].get_string().value());
    const std::vector<float> printed = Floats(floats.at(i)["embedding"].value());
    ASSERT_EQ(decoded.size(), 384u);
    // to_chars prints the shortest text that reads back as the same float.
    for (size_t k = 0; k < decoded.size(); ++k) ASSERT_EQ(decoded[k], printed[k]);
  }
}

TEST_F(GatewayTest, EveryInputShape) {
  const auto ids = served_->Encode("token ids in");
  std::string ids_json = "[";
  for (size_t i = 0; i < ids.size(); ++i) ids_json += (i ? "," : "") + std::to_string(ids[i]);
  ids_json += "]";
  const std::vector<float> expected = served_->Embed(ids);
  for (const std::string& input : {std::string(R"("token ids in")"), std::string(R"(["token ids in"])"), ids_json,
                                   "[" + ids_json + "]"}) {
    const auto answer = Post(served_->port(), "/v1/embeddings", R"({"input": )" + input + "}");
    ASSERT_EQ(answer.status, 200) << input << ": " << answer.body;
    auto data = Parse(parser_, answer.body)["data"].get_array().value();
    ASSERT_EQ(data.size(), 1u) << input;
    ExpectNear(Floats(data.at(0)["embedding"].value()), expected);
  }
}

TEST_F(GatewayTest, DimensionsKeepTheLeadingComponentsRenormalised) {
  const auto answer = Post(served_->port(), "/v1/embeddings", R"({"input": "matryoshka", "dimensions": 64})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  const auto vector = Floats(Parse(parser_, answer.body)["data"].at(0)["embedding"].value());
  ExpectNear(vector, Renormalized(served_->Embed(served_->Encode("matryoshka"), {.normalize = false}), 64));
}

TEST_F(GatewayTest, TeiEmbedWithNormalizeTruncateAndPrompts) {
  auto answer = Post(served_->port(), "/embed", R"({"inputs": ["one", "two"], "normalize": false})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto rows = Parse(parser_, answer.body).get_array().value();
  ASSERT_EQ(rows.size(), 2u);
  ExpectNear(Floats(rows.at(1).value()), served_->Embed(served_->Encode("two"), {.normalize = false}), 1e-4);

  // 300 words: more than the model's 256 tokens.
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "word" + std::to_string(i % 7) + " ";
  answer = Post(served_->port(), "/embed", R"({"inputs": ")" + long_text + R"("})");
  EXPECT_EQ(answer.status, 422);
  EXPECT_NE(answer.body.find("the model takes at most 256"), std::string::npos) << answer.body;
  for (const std::string direction : {"right", "left"}) {
    answer = Post(served_->port(), "/embed",
                  R"({"inputs": ")" + long_text + R"(", "truncate": true, "truncation_direction": ")" + direction + R"("})");
    ASSERT_EQ(answer.status, 200) << answer.body;
    const auto side = direction == "left" ? tokenizer::TruncationSide::kLeft : tokenizer::TruncationSide::kRight;
    ExpectNear(Floats(Parse(parser_, answer.body).at(0).value()), served_->Embed(served_->Encode(long_text, 256, side)));
  }
  answer = Post(served_->port(), "/embed", R"({"inputs": "x", "prompt_name": "query"})");
  EXPECT_EQ(answer.status, 400);
  EXPECT_NE(answer.body.find("unknown prompt_name 'query'"), std::string::npos) << answer.body;
}

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
  EXPECT_EQ(std::string_view(info["cpu"]["gemm"].get_string().value()), engine::cpu::DetectCpuPath().gemm);
  EXPECT_EQ(std::string_view(info["version"].get_string().value()), STAMEN_VERSION);
  Post(served_->port(), "/v1/embeddings", R"({"input": "count me"})");
  answer = Http(served_->port(), "GET", "/metrics");
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.Header("content-type"), "text/plain; version=0.0.4");
  EXPECT_NE(answer.body.find("stamen_gateway_responses_total{route=\"/v1/embeddings\",status=\"200\"}"), std::string::npos);
  EXPECT_NE(answer.body.find("stamen_batch_tokens_bucket"), std::string::npos);  // the worker's, same registry
}

struct ErrorCase {
  std::string path, body;
  int status;
  std::string message;
};

TEST_F(GatewayTest, EveryErrorClassHasItsStatusAndMessage) {
  const std::vector<ErrorCase> cases = {
      {"/v1/embeddings", "{not json", 400, "not valid JSON"},
      {"/v1/embeddings", "[1,2]", 400, "must be a JSON object"},
      {"/v1/embeddings", "{}", 400, "missing 'input'"},
      {"/v1/embeddings", R"({"input": 5})", 400, "'input' must be a string"},
      {"/v1/embeddings", R"({"input": []})", 400, "'input' is empty"},
      {"/v1/embeddings", R"({"input": [""]})", 400, "input 0 is an empty string"},
      {"/v1/embeddings", R"({"input": ["a", 3]})", 400, "'input'[1] must be a string or an array of token ids"},
      {"/v1/embeddings", R"({"input": [[1, 99999999]]})", 400, "token id 99999999 is outside the vocabulary"},
      {"/v1/embeddings", R"({"input": "a", "encoding_format": "hex"})", 400, "'encoding_format' must be"},
      {"/v1/embeddings", R"({"input": "a", "dimensions": 0})", 400, "'dimensions' must be a positive integer"},
      {"/v1/embeddings", R"({"input": "a", "dimensions": 385})", 400, "'dimensions' 385 exceeds the model's 384"},
      {"/embed", R"({"inputs": "a", "normalize": "yes"})", 400, "'normalize' must be a boolean"},
      {"/embed", R"({"inputs": "a", "truncation_direction": "up"})", 400, "'truncation_direction' must be"},
      {"/v1/embeddings", R"({"input": "a", "priority": "urgent"})", 400, "'priority' must be \\\"high\\\", \\\"normal\\\" or \\\"low\\\""},
      {"/embed", R"({"inputs": "a", "priority": 1})", 400, "'priority' must be a string"},
      {"/v1/embeddings", R"({"input": ["1","2","3","4","5","6","7","8","9"]})", 413,
       "batch of 9 inputs exceeds --max-client-batch-size 8"},
      {"/v1/embeddings", R"({"input": ")" + std::string(70 * 1024, 'a') + R"("})", 413, "payload too large"},
      {"/rerank", R"({"query": "q", "texts": ["a"]})", 400, "is an embedding model, not a reranker"},
      {"/tokenize", R"({"inputs": [[1, 2]]})", 400, "'inputs' must be a string or an array of strings"},
      {"/nowhere", "{}", 404, "no route POST /nowhere"},
  };
  for (const ErrorCase& error : cases) {
    const auto answer = Post(served_->port(), error.path, error.body);
    EXPECT_EQ(answer.status, error.status) << error.path << " " << error.body.substr(0, 80) << ": " << answer.body;
    EXPECT_NE(answer.body.find(error.message), std::string::npos) << answer.body;
    simdjson::dom::parser parser;
    auto root = Parse(parser, answer.body);
    EXPECT_EQ(root["error"]["code"].get_int64().value(), error.status) << answer.body;
  }
  const auto wrong_method = Http(served_->port(), "GET", "/v1/embeddings");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.Header("allow"), "POST");
  // Still serving.
  EXPECT_EQ(Post(served_->port(), "/v1/embeddings", R"({"input": "fine"})").status, 200);
}

TEST(GatewayLimitsTest, ApiKeyGuardsEveryRouteButHealth) {
  GatewayOptions options;
  options.api_key = "s3cret";
  Served served(Embedder(), options);
  EXPECT_EQ(Http(served.port(), "GET", "/health").status, 200);
  EXPECT_EQ(Http(served.port(), "GET", "/info").status, 401);
  EXPECT_EQ(Http(served.port(), "GET", "/metrics").status, 401);
  auto answer = Post(served.port(), "/v1/embeddings", R"({"input": "a"})");
  EXPECT_EQ(answer.status, 401);
  EXPECT_NE(answer.body.find("API key"), std::string::npos);
  EXPECT_EQ(Post(served.port(), "/v1/embeddings", R"({"input": "a"})", {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(Post(served.port(), "/v1/embeddings", R"({"input": "a"})", {{"Authorization", "Bearer s3cret"}}).status, 200);
}

// A request's priority: the one it names, else low beyond --bulk-threshold inputs; the
// worker's queue time shows it by priority.
TEST(GatewayLimitsTest, PriorityIsNamedOrFollowsTheBulkThreshold) {
  GatewayOptions options;
  options.bulk_threshold = 2;
  Served served(Embedder(), options);
  EXPECT_EQ(Post(served.port(), "/v1/embeddings", R"({"input": ["a", "b", "c"]})").status, 200);  // bulk: low
  EXPECT_EQ(Post(served.port(), "/embed", R"({"inputs": ["a", "b"]})").status, 200);              // normal
  EXPECT_EQ(Post(served.port(), "/embed", R"({"inputs": ["a", "b", "c"], "priority": "high"})").status, 200);
  const std::string metrics = Http(served.port(), "GET", "/metrics").body;
  for (const char* priority : {"high", "normal", "low"}) {
    EXPECT_NE(metrics.find(std::string("stamen_queue_seconds_count{priority=\"") + priority + "\"} 1"), std::string::npos)
        << priority << "\n" << metrics;
  }
}

TEST(GatewayLimitsTest, BeyondMaxConcurrentRequestsIs429) {
  GatewayOptions options;
  options.max_concurrent_requests = 0;
  Served served(Embedder(), options);
  const auto answer = Post(served.port(), "/v1/embeddings", R"({"input": "a"})");
  EXPECT_EQ(answer.status, 429);
  EXPECT_NE(answer.body.find("--max-concurrent-requests"), std::string::npos);
  EXPECT_EQ(Http(served.port(), "GET", "/health").status, 200);
}

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
}

}  // namespace
}  // namespace stamen::gateway
