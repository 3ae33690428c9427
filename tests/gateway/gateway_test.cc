// `stamen serve`'s gateway over real HTTP on loopback, with an in-process worker on a
// one-layer random model that has the real all-MiniLM-L6-v2 (WordPiece) or XLM-R tokenizer:
// every route and input shape of ../shared/docs/api.md, answers compared with the engine and
// tokenizer run directly in the test, and every error class with its status and message.
#include "gateway/model_router.h"
#include "gateway/in_process_backend.h"
#include "gateway/json_read.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <signal.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <regex>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>

#include "engine/cpu/cpu_path.h"
#include "engine/cpu/kernels.h"
#include "engine/engine.h"
#include "model_folder/model_tokenizer.h"
#include "engine/weight_store.h"
#include "server/local_worker.h"
#include "tests/gateway/http_client.h"
#include "tests/gateway/base64_floats.h"
#include "tests/server/test_models.h"
#include "gateway/tei_api.h"

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
    auto gateway = ModelRouter::Start({options}, registry_);
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
  // The engine's vector for `ids` alone, L2-normalised here when `normalize` (SPLADE vectors
  // never are).
  std::vector<float> Embed(const std::vector<int32_t>& ids, engine::StepOptions step = {}, bool normalize = true) {
    const std::vector<int32_t> cu_seqlens = {0, static_cast<int32_t>(ids.size())};
    auto result = engine_->Step({ids, cu_seqlens, {}}, step);
    EXPECT_TRUE(result.ok() && result->Wait().ok());
    auto row = result->Row(0);
    std::vector<float> values(row.begin(), row.end());
    if (normalize && step.pooling.value_or(engine_->default_pooling().value_or(engine::ops::PoolingMode::kCls)) !=
                         engine::ops::PoolingMode::kSplade) {
      double squares = 0;
      for (float v : values) squares += double(v) * v;
      for (float& v : values) v = static_cast<float>(v / std::max(std::sqrt(squares), 1e-12));
    }
    return values;
  }
  float Score(const std::string& query, const std::string& document) {
    std::vector<int32_t> ids, types;
    tokenizer_->EncodePair(query, document, 0, &ids, &types);
    const std::vector<int32_t> cu_seqlens = {0, static_cast<int32_t>(ids.size())};
    auto result = engine_->Step({ids, cu_seqlens, {}}, {.output = engine::StepOutput::kScores});
    EXPECT_TRUE(result.ok() && result->Wait().ok());
    return result->Row(0)[0];
  }
  // The classifier's logits (one per label) for a text, or a pair with its segment ids.
  std::vector<float> Logits(const std::string& first, const std::optional<std::string>& second = std::nullopt) {
    std::vector<int32_t> ids, types;
    if (second) {
      tokenizer_->EncodePair(first, *second, 0, &ids, &types);
    } else {
      tokenizer_->Encode(first, 0, &ids);
    }
    const std::vector<int32_t> cu_seqlens = {0, static_cast<int32_t>(ids.size())};
    auto result = engine_->Step({ids, cu_seqlens, types}, {.output = engine::StepOutput::kScores});
    EXPECT_TRUE(result.ok() && result->Wait().ok());
    auto row = result->Row(0);
    return {row.begin(), row.end()};
  }
  // Every token's last hidden state for `ids` alone, and the tokenizer's tokens with offsets.
  engine::Tensor TokenStates(const std::vector<int32_t>& ids) {
    const std::vector<int32_t> cu_seqlens = {0, static_cast<int32_t>(ids.size())};
    auto result = engine_->Step({ids, cu_seqlens, {}}, {.output = engine::StepOutput::kTokenEmbeddings});
    EXPECT_TRUE(result.ok() && result->Wait().ok());
    return result->values();
  }
  std::vector<engine::ModelTokenizer::Token> Tokenize(const std::string& text) { return tokenizer_->Tokenize(text, true); }
  int64_t MaxLength() const { return engine::MaxSequenceLength(engine_->config(), engine_->sentence_transformers()); }
  metrics::Registry& registry() { return registry_; }

 private:
  metrics::Registry registry_;
  std::unique_ptr<server::LocalWorker> worker_;
  std::unique_ptr<ModelRouter> gateway_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<engine::ModelTokenizer> tokenizer_;
};

std::string Embedder() { return server::testing::MakeModel("all-MiniLM-L6-v2", 30522); }

// A BERT classifier with three labels (LABEL_0, LABEL_1, LABEL_2) and the real tokenizer.
std::string ThreeLabelClassifier() {
  const std::string out = server::testing::ScratchFolder() + "/ms-marco-3-labels";
  if (!std::filesystem::exists(out + "/config.json")) {
    const std::string command = std::string("'") + STAMEN_CLI + "' make-model --like ms-marco-MiniLM-L6-v2 --random-seed 5 "
                                "--layers 1 --labels 3 --out '" + out + "' > /dev/null 2>&1";
    if (std::system(command.c_str()) != 0) return "";
  }
  return out;
}

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, a_squares = 0, b_squares = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    a_squares += double(a[i]) * a[i];
    b_squares += double(b[i]) * b[i];
  }
  return dot / std::sqrt(a_squares * b_squares);
}

double Sigmoid(double logit) { return 1 / (1 + std::exp(-logit)); }

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
  ExpectNear(vector, Renormalized(served_->Embed(served_->Encode("matryoshka"), {}, false), 64));
}

TEST_F(GatewayTest, TeiEmbedWithNormalizeTruncateAndPrompts) {
  auto answer = Post(served_->port(), "/embed", R"({"inputs": ["one", "two"], "normalize": false})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto rows = Parse(parser_, answer.body).get_array().value();
  ASSERT_EQ(rows.size(), 2u);
  ExpectNear(Floats(rows.at(1).value()), served_->Embed(served_->Encode("two"), {}, false), 1e-4);

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
  EXPECT_EQ(std::string_view(info["cpu"]["gemm"].get_string().value()), engine::cpu::DescribeGemm(false));
  EXPECT_EQ(std::string_view(info["version"].get_string().value()), STAMEN_VERSION);
  Post(served_->port(), "/v1/embeddings", R"({"input": "count me"})");
  answer = Http(served_->port(), "GET", "/metrics");
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.Header("content-type"), "text/plain; version=0.0.4");
  EXPECT_NE(answer.body.find("stamen_gateway_responses_total{route=\"/v1/embeddings\",status=\"200\"}"), std::string::npos);
  EXPECT_NE(answer.body.find("stamen_batch_tokens_bucket"), std::string::npos);  // the worker's, same registry
}

void ExpectErrorShape(const std::string& path, int status, const std::string& body, const std::string& tei_type = "");
void ExpectErrorShapeOf(const std::string& path, const testing::HttpAnswer& answer) {
  ExpectErrorShape(path, answer.status, answer.body);
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

// The mean of the token states whose byte span lies inside [start, end), L2-normalised: the
// late chunking rule written out over the engine's per-token output.
std::vector<float> ChunkVector(Served& served, const std::string& text, int64_t start, int64_t end) {
  const auto tokens = served.Tokenize(text);
  std::vector<int32_t> ids;
  for (const auto& token : tokens) ids.push_back(token.id);
  const engine::Tensor states = served.TokenStates(ids);
  const int64_t width = states.dim(1);
  std::vector<double> sum(width, 0.0);
  int count = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t].special || tokens[t].begin < start || tokens[t].end > end) continue;
    for (int64_t c = 0; c < width; ++c) sum[c] += states.data<float>()[t * width + c];
    ++count;
  }
  std::vector<float> mean(width);
  for (int64_t c = 0; c < width; ++c) mean[c] = static_cast<float>(sum[c] / count);
  return Renormalized(mean, width);
}

TEST_F(GatewayTest, LateChunkingPoolsEachChunksTokensFromOnePass) {
  const std::string text = "The cat sat on the mat. It was happy, and so was the dog.";
  const std::vector<std::pair<int64_t, int64_t>> chunks = {{0, 23}, {24, 57}, {4, 11}, {0, 57}};
  const auto answer = Post(served_->port(), "/embed",
                           R"({"inputs": ")" + text + R"(", "chunks": [[0, 23], [24, 57], [4, 11], [0, 57]]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto inputs = Parse(parser_, answer.body).get_array().value();
  ASSERT_EQ(inputs.size(), 1u);
  auto vectors = inputs.at(0).get_array().value();
  ASSERT_EQ(vectors.size(), chunks.size());
  for (size_t k = 0; k < chunks.size(); ++k) {
    ExpectNear(Floats(vectors.at(k)), ChunkVector(*served_, text, chunks[k].first, chunks[k].second));
  }
  // Context: a chunk's vector is not the chunk embedded alone.
  const auto alone = served_->Embed(served_->Encode("The cat"));
  EXPECT_LT(Cosine(Floats(vectors.at(2)), alone), 0.9999);

  // A list of inputs takes one list of chunks each; OpenAI's answer has one item per chunk.
  const auto listed = Post(served_->port(), "/v1/embeddings",
                           R"({"input": ["The cat sat.", ")" + text + R"("], "chunks": [[[0, 7]], [[24, 57], [0, 23]]]})");
  ASSERT_EQ(listed.status, 200) << listed.body;
  auto data = Parse(parser_, listed.body)["data"].get_array().value();
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(data.at(2)["index"].get_int64().value(), 2);
  EXPECT_EQ(data.at(2)["input_index"].get_int64().value(), 1);
  EXPECT_EQ(data.at(2)["chunk"].at(0).get_int64().value(), 0);
  ExpectNear(Floats(data.at(0)["embedding"]), ChunkVector(*served_, "The cat sat.", 0, 7));
  ExpectNear(Floats(data.at(1)["embedding"]), ChunkVector(*served_, text, 24, 57));
  ExpectNear(Floats(data.at(2)["embedding"]), ChunkVector(*served_, text, 0, 23));
}

TEST_F(GatewayTest, LateChunkingRunsALongTextInWindows) {
  // About 600 tokens, more than the model takes: refused whole, chunked in windows.
  std::string text;
  for (int i = 0; i < 120; ++i) text += "word" + std::to_string(i) + " here. ";
  const auto whole = Post(served_->port(), "/embed", R"({"inputs": ")" + text + R"("})");
  EXPECT_EQ(whole.status, 422) << whole.body;
  const int64_t size = static_cast<int64_t>(text.size());
  const std::string body = R"({"inputs": ")" + text + R"(", "chunks": [[0, 40], [)" + std::to_string(size / 2) + ", " +
                           std::to_string(size / 2 + 40) + "], [" + std::to_string(size - 40) + ", " +
                           std::to_string(size) + "]]}";
  const auto chunked = Post(served_->port(), "/embed", body);
  ASSERT_EQ(chunked.status, 200) << chunked.body;
  auto vectors = Parse(parser_, chunked.body).at(0).get_array().value();
  ASSERT_EQ(vectors.size(), 3u);
  // The first chunk's window is the text's first (max length - 2) tokens: its vector is the
  // chunk pooled over the states of that window, [CLS] and [SEP] around it.
  const auto tokens = served_->Tokenize(text);
  const size_t window_end = static_cast<size_t>(served_->MaxLength()) - 1;
  ASSERT_GT(tokens.size(), window_end + 1);
  std::vector<int32_t> window = {tokens.front().id};
  for (size_t t = 1; t < window_end; ++t) window.push_back(tokens[t].id);
  window.push_back(tokens.back().id);
  const engine::Tensor states = served_->TokenStates(window);
  std::vector<float> mean(states.dim(1), 0.0f);
  int count = 0;
  for (size_t t = 1; t < window_end; ++t) {
    if (tokens[t].end > 40) break;
    for (int64_t c = 0; c < states.dim(1); ++c) mean[c] += states.data<float>()[t * states.dim(1) + c];
    ++count;
  }
  for (float& value : mean) value /= count;
  ExpectNear(Floats(vectors.at(0)), Renormalized(mean, mean.size()));
}

// A chunking rule cuts the chunks in the gateway: the answer carries each chunk's span, and its
// vectors are those of the same spans given as "chunks".
TEST_F(GatewayTest, LateChunkingByARuleAnswersEachChunksSpan) {
  const std::string text = "The cat sat on the mat. It was happy, and so was the dog.";
  for (const std::string rule : {R"("sentences")", R"({"tokens": 5, "overlap": 2})"}) {
    const auto ruled = Post(served_->port(), "/embed", R"({"inputs": ")" + text + R"(", "chunking": )" + rule + "}");
    ASSERT_EQ(ruled.status, 200) << ruled.body;
    auto items = Parse(parser_, ruled.body).at(0).get_array().value();
    ASSERT_GE(items.size(), 2u) << rule;
    std::string spans;
    std::vector<std::vector<float>> vectors;
    for (auto item : items) {
      const int64_t start = item["chunk"].at(0).get_int64().value(), end = item["chunk"].at(1).get_int64().value();
      spans += (spans.empty() ? "[" : ",[") + std::to_string(start) + "," + std::to_string(end) + "]";
      vectors.push_back(Floats(item["embedding"]));
      ExpectNear(vectors.back(), ChunkVector(*served_, text, start, end));
    }
    if (rule == R"("sentences")") {
      EXPECT_EQ(spans, "[0,23],[23,57]");
    }
    simdjson::dom::parser other;
    const auto given = Post(served_->port(), "/embed", R"({"inputs": ")" + text + R"(", "chunks": [)" + spans + "]}");
    ASSERT_EQ(given.status, 200) << given.body;
    auto given_vectors = Parse(other, given.body).at(0).get_array().value();
    for (size_t k = 0; k < vectors.size(); ++k) ExpectNear(Floats(given_vectors.at(k)), vectors[k], 1e-6);
  }
  const auto openai = Post(served_->port(), "/v1/embeddings",
                           R"({"input": ["A b. C d.", "E f."], "chunking": "sentences"})");
  ASSERT_EQ(openai.status, 200) << openai.body;
  auto data = Parse(parser_, openai.body)["data"].get_array().value();
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(data.at(2)["input_index"].get_int64().value(), 1);
  EXPECT_EQ(data.at(1)["chunk"].at(0).get_int64().value(), 4);
  EXPECT_EQ(Post(served_->port(), "/embed", R"({"inputs": "a", "chunking": "paragraphs"})").status, 400);
  EXPECT_EQ(Post(served_->port(), "/embed", R"({"inputs": " . ", "chunking": {"tokens": 3}})").status, 200);
}

TEST_F(GatewayTest, LateChunkingErrorsNameTheChunk) {
  const auto ids = Post(served_->port(), "/embed", R"({"inputs": [101, 7592, 102], "chunks": [[0, 2]]})");
  EXPECT_EQ(ids.status, 400);
  EXPECT_NE(ids.body.find("token ids have no text offsets"), std::string::npos) << ids.body;
  const auto past = Post(served_->port(), "/embed", R"({"inputs": "The cat", "chunks": [[0, 8]]})");
  EXPECT_EQ(past.status, 400);
  EXPECT_NE(past.body.find("input 0: chunk 0 [0, 8) ends past the text's 7 bytes"), std::string::npos) << past.body;
  const auto empty = Post(served_->port(), "/embed", R"({"inputs": "The cat", "chunks": [[3, 4]]})");
  EXPECT_EQ(empty.status, 422);
  EXPECT_NE(empty.body.find("holds no token"), std::string::npos) << empty.body;
  const auto shape = Post(served_->port(), "/embed", R"({"inputs": ["a", "b"], "chunks": [[0, 1]]})");
  EXPECT_EQ(shape.status, 400);
  EXPECT_NE(shape.body.find("give one list per input"), std::string::npos) << shape.body;
  const auto order = Post(served_->port(), "/embed", R"({"inputs": "The cat", "chunks": [[4, 2]]})");
  EXPECT_EQ(order.status, 400);
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

TEST_F(GatewayTest, OpenAIModelsListTheServedModel) {
  simdjson::dom::parser info_parser;
  const std::string model_id(Parse(info_parser, Http(served_->port(), "GET", "/info").body)["model_id"].get_string().value());
  auto answer = Http(served_->port(), "GET", "/v1/models");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser parser;
  auto root = Parse(parser, answer.body);
  EXPECT_EQ(std::string_view(root["object"].get_string().value()), "list");
  auto data = root["data"].get_array().value();
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(std::string_view(data.at(0)["id"].get_string().value()), model_id);
  EXPECT_EQ(std::string_view(data.at(0)["object"].get_string().value()), "model");
  EXPECT_EQ(std::string_view(data.at(0)["owned_by"].get_string().value()), "stamen");
  const int64_t created = data.at(0)["created"].get_int64().value();
  EXPECT_GT(created, 1'700'000'000);

  answer = Http(served_->port(), "GET", "/v1/models/" + model_id);
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser model_parser;
  auto model = Parse(model_parser, answer.body);
  EXPECT_EQ(std::string_view(model["id"].get_string().value()), model_id);
  EXPECT_EQ(model["created"].get_int64().value(), created);

  answer = Http(served_->port(), "GET", "/v1/models/gpt-4");
  EXPECT_EQ(answer.status, 404);
  EXPECT_NE(answer.body.find("the model 'gpt-4' does not exist"), std::string::npos) << answer.body;
  ExpectErrorShapeOf("/v1/models/gpt-4", answer);
  simdjson::dom::parser error_parser;
  auto error = Parse(error_parser, answer.body)["error"];
  EXPECT_EQ(std::string_view(error["type"].get_string().value()), "invalid_request_error");
  EXPECT_EQ(std::string_view(error["code"].get_string().value()), "model_not_found");
  answer = Post(served_->port(), "/v1/models", "{}");
  EXPECT_EQ(answer.status, 405);
  EXPECT_EQ(answer.Header("allow"), "GET");
}

struct ErrorCase {
  std::string path, body;
  int status;
  std::string message;
};

bool IsTeiRoute(const std::string& path) {
  return path == "/" || path == "/embed" || path == "/rerank" || path == "/tokenize" || path == "/predict" ||
         path == "/similarity" || path == "/decode" || path == "/invocations" || path == "/health" || path == "/ping";
}

bool IsCohereRoute(const std::string& path) { return path == "/v1/rerank" || path.rfind("/v2/", 0) == 0; }

// The body is the error shape of the route's API: TEI's {"error": "…", "error_type"} or
// OpenAI's {"error": {"message", "type", "param", "code"}}.
void ExpectErrorShape(const std::string& path, int status, const std::string& body, const std::string& tei_type) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body);
  if (IsCohereRoute(path)) {
    // Cohere's {"message": "…"}, nothing else.
    EXPECT_TRUE(root["message"].is_string()) << path << ": " << body;
    EXPECT_EQ(root.get_object().value().size(), 1u) << path << ": " << body;
  } else if (IsTeiRoute(path)) {
    std::string_view message, error_type;
    EXPECT_EQ(root["error"].get(message), simdjson::SUCCESS) << path << ": " << body;
    EXPECT_EQ(root["error_type"].get(error_type), simdjson::SUCCESS) << path << ": " << body;
    // An empty batch ("'inputs' is empty", …) is TEI's own class.
    const bool empty_batch = status == 400 && message.ends_with("' is empty");
    const std::string expected = !tei_type.empty() ? tei_type
                                 : empty_batch     ? "Empty"
                                 : status == 429   ? "Overloaded"
                                 : status == 503   ? "Unhealthy"
                                 : status == 424   ? "Backend"
                                                   : "Validation";
    EXPECT_EQ(error_type, expected) << path << ": " << body;
  } else {
    // The status as the code, or OpenAI's named code where it has one.
    int64_t code = 0;
    std::string_view named;
    if (root["error"]["code"].get(named) == simdjson::SUCCESS) {
      EXPECT_EQ(named, status == 404 ? "model_not_found" : "") << path << ": " << body;
    } else {
      EXPECT_EQ(root["error"]["code"].get(code), simdjson::SUCCESS) << path << ": " << body;
      EXPECT_EQ(code, status) << path << ": " << body;
    }
    EXPECT_TRUE(root["error"]["message"].is_string()) << body;
    EXPECT_TRUE(root["error"]["type"].is_string()) << body;
    EXPECT_TRUE(root["error"]["param"].is_null()) << body;
  }
}

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
      // Fields TEI has not: refused (422, as TEI refuses a field of the wrong type), never ignored.
      {"/tokenize", R"({"inputs": "a", "max_length": -1})", 422, "'max_length' must be a positive integer"},
      {"/rerank", R"({"query": "q", "texts": ["a"], "top_n": -1})", 422, "'top_n' must be a positive integer"},
      {"/v1/rerank", R"({"query": "q", "documents": ["a"], "top_n": -1})", 400, "'top_n' must be a positive integer"},
      {"/nowhere", "{}", 404, "no route POST /nowhere"},
      // TEI's other routes, in TEI's error shape.
      {"/embed", R"({"inputs": ")" + std::string(70 * 1024, 'a') + R"("})", 413, "payload too large"},
      {"/embed", R"({"inputs": ["1","2","3","4","5","6","7","8","9"]})", 413, "exceeds --max-client-batch-size 8"},
      {"/", "{not json", 400, "not valid JSON"},
      {"/", R"({"inputs": ""})", 400, "input 0 is an empty string"},
      {"/invocations", "{}", 400, "missing 'inputs'"},
      {"/predict", R"({"inputs": "a text"})", 400, "is an embedding model, not a classifier"},
      {"/similarity", "{}", 400, "missing 'inputs'"},
      {"/similarity", R"({"inputs": "a"})", 400, "'inputs' must be an object"},
      {"/similarity", R"({"inputs": {"sentences": ["b"]}})", 400, "missing 'inputs.source_sentence'"},
      {"/similarity", R"({"inputs": {"source_sentence": "a"}})", 400, "missing 'inputs.sentences'"},
      {"/similarity", R"({"inputs": {"source_sentence": "a", "sentences": []}})", 400, "'inputs.sentences' is empty"},
      {"/similarity", R"({"inputs": {"source_sentence": "a", "sentences": ["b", 3]}})", 400,
       "'inputs.sentences'[1] must be a string"},
      {"/similarity", R"({"inputs": {"source_sentence": "", "sentences": ["b"]}})", 400,
       "'inputs.source_sentence' is an empty string"},
      {"/similarity", R"({"inputs": {"source_sentence": "a", "sentences": ["b"]}, "parameters": 1})", 400,
       "'parameters' must be an object"},
      {"/similarity", R"({"inputs": {"source_sentence": "a", "sentences": ["b"]}, "parameters": {"prompt_name": "query"}})",
       400, "unknown prompt_name 'query'"},
      {"/similarity", R"({"inputs": {"source_sentence": "a", "sentences": ["1","2","3","4","5","6","7","8"]}})", 413,
       "batch of 9 sentences (with the source sentence) exceeds --max-client-batch-size 8"},
      {"/similarity", R"({"inputs": {"source_sentence": "a", "sentences": ["b"]}, "priority": "urgent"})", 400,
       "'priority' must be \\\"high\\\", \\\"normal\\\" or \\\"low\\\""},
      {"/predict", R"({"inputs": "a", "priority": 1})", 400, "'priority' must be a string"},
      {"/decode", "{}", 400, "missing 'ids'"},
      {"/decode", R"({"ids": "101"})", 400, "'ids' must be an array of token ids"},
      {"/decode", R"({"ids": []})", 400, "'ids' is empty"},
      {"/decode", R"({"ids": [101, "a"]})", 400, "token ids must all be integers"},
      {"/decode", R"({"ids": [[101], 7]})", 400, "'ids'[1] must be an array of token ids"},
      {"/decode", R"({"ids": [101, 30522]})", 400, "token id 30522 is outside the tokenizer's vocabulary (0..30521)"},
      {"/decode", R"({"ids": [101], "skip_special_tokens": "no"})", 400, "'skip_special_tokens' must be a boolean"},
  };
  for (const ErrorCase& error : cases) {
    const auto answer = Post(served_->port(), error.path, error.body);
    EXPECT_EQ(answer.status, error.status) << error.path << " " << error.body.substr(0, 80) << ": " << answer.body;
    EXPECT_NE(answer.body.find(error.message), std::string::npos) << answer.body;
    ExpectErrorShape(error.path, error.status, answer.body);
  }
  const auto wrong_method = Http(served_->port(), "GET", "/v1/embeddings");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.Header("allow"), "POST");
  ExpectErrorShape("/v1/embeddings", 405, wrong_method.body);
  for (const std::string path : {"/predict", "/similarity", "/decode", "/invocations"}) {
    const auto answer = Http(served_->port(), "GET", path);
    EXPECT_EQ(answer.status, 405) << path;
    EXPECT_EQ(answer.Header("allow"), "POST") << path;
    ExpectErrorShape(path, 405, answer.body);
  }
  const auto post_ping = Post(served_->port(), "/ping", "{}");
  EXPECT_EQ(post_ping.status, 405);
  EXPECT_EQ(post_ping.Header("allow"), "GET");
  ExpectErrorShape("/ping", 405, post_ping.body);
  const auto put_root = Http(served_->port(), "PUT", "/", "{}");
  EXPECT_EQ(put_root.status, 405);
  EXPECT_EQ(put_root.Header("allow"), "POST, GET");
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
  // The scheme's name is case-insensitive (RFC 9110); the key is not.
  for (const std::string scheme : {"bearer", "BEARER", "BeArEr"}) {
    EXPECT_EQ(Post(served.port(), "/v1/embeddings", R"({"input": "a"})", {{"Authorization", scheme + " s3cret"}}).status,
              200) << scheme;
  }
  EXPECT_EQ(Post(served.port(), "/v1/embeddings", R"({"input": "a"})", {{"Authorization", "bearer S3CRET"}}).status, 401);
  EXPECT_EQ(Post(served.port(), "/v1/embeddings", R"({"input": "a"})", {{"Authorization", "Basic s3cret"}}).status, 401);
  EXPECT_EQ(Post(served.port(), "/v1/embeddings", R"({"input": "a"})", {{"Authorization", "Bearer"}}).status, 401);
  // Liveness needs no key either.
  EXPECT_EQ(Http(served.port(), "GET", "/live").status, 200);
  // Health probes (Kubernetes, SageMaker) send no key.
  EXPECT_EQ(Http(served.port(), "GET", "/").status, 200);
  EXPECT_EQ(Http(served.port(), "GET", "/ping").status, 200);
  for (const std::string path : {"/embed", "/", "/predict", "/decode"}) {
    answer = Post(served.port(), path, R"({"inputs": "a"})");
    EXPECT_EQ(answer.status, 401) << path;
    ExpectErrorShape(path, 401, answer.body);
  }
  EXPECT_EQ(Http(served.port(), "GET", "/v1/models").status, 401);
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
  ExpectErrorShape("/v1/embeddings", 429, answer.body);
  for (const std::string path : {"/embed", "/similarity", "/decode", "/"}) {
    const auto tei = Post(served.port(), path, R"({"inputs": "a"})");
    EXPECT_EQ(tei.status, 429) << path;
    ExpectErrorShape(path, 429, tei.body);
  }
  EXPECT_EQ(Http(served.port(), "GET", "/health").status, 200);
  EXPECT_EQ(Http(served.port(), "GET", "/ping").status, 200);
  EXPECT_EQ(Http(served.port(), "GET", "/v1/models").status, 200);
}

// Yes/no LLM rerankers (tests/engine/data): the gateway wraps each (query, document) in the
// family's template, so /rerank's raw score is transformers' logit("yes") - logit("no") for the
// ids the model card's code makes of it (Qwen3-Reranker; mxbai-rerank-v2 on Qwen2: "1" - "0"),
// or logit("Yes") alone (bge-reranker-v2-gemma; Gemma 2's soft-capped, with the prompt its
// yes_no_reranker.json names), or bge-reranker-v2.5-gemma2-lightweight's CostWiseGemma head at its
// default cut-off (FlagEmbedding's LightweightLLMReranker.compute_score, the lightweight preset), and
// the normalized scores (/rerank, Cohere's /v1/rerank) are its sigmoid.
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
                                           "tiny-gemma2-reranker", "tiny-gemma2-costwise-reranker"),
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

TEST(ApiFamilyTest, EachFamilyWritesItsErrorShape) {
  const ApiError invalid{400, "bad \"input\""};
  EXPECT_EQ(ErrorBody(invalid, ApiFamily::kOpenAI),
            R"({"error":{"message":"bad \"input\"","type":"invalid_request_error","param":null,"code":400}})");
  EXPECT_EQ(ErrorBody(invalid, ApiFamily::kTei), R"({"error":"bad \"input\"","error_type":"Validation"})");
  // TEI's own class for an empty batch, an invalid request to the others.
  const ApiError empty = EmptyBatch("'inputs' is empty");
  EXPECT_EQ(ErrorBody(empty, ApiFamily::kTei), R"({"error":"'inputs' is empty","error_type":"Empty"})");
  EXPECT_EQ(ErrorStatus(empty, ApiFamily::kTei), 400);
  EXPECT_EQ(ErrorBody(empty, ApiFamily::kOpenAI),
            R"({"error":{"message":"'inputs' is empty","type":"invalid_request_error","param":null,"code":400}})");
  EXPECT_EQ(ErrorBody(invalid, ApiFamily::kCohere), R"({"message":"bad \"input\""})");
  // TEI: a failed inference is 424 "backend"; the others keep 500.
  const ApiError failed{500, "inference failed", "server_error"};
  EXPECT_EQ(ErrorStatus(failed, ApiFamily::kTei), 424);
  EXPECT_EQ(ErrorStatus(failed, ApiFamily::kOpenAI), 500);
  EXPECT_EQ(ErrorBody(failed, ApiFamily::kTei), R"({"error":"inference failed","error_type":"Backend"})");
  EXPECT_EQ(ErrorBody({429, "overloaded", "overloaded"}, ApiFamily::kTei), R"({"error":"overloaded","error_type":"Overloaded"})");
  EXPECT_EQ(ErrorBody({503, "no healthy worker", "unavailable"}, ApiFamily::kTei),
            R"({"error":"no healthy worker","error_type":"Unhealthy"})");
  EXPECT_EQ(ErrorStatus({422, "too long"}, ApiFamily::kTei), 422);
}

TEST(RouteTableTest, MatchesMethodsAndPathParameters) {
  auto nothing = [](const http::Request&, Reply) {};
  const RouteTable table({{"/", "POST", ApiFamily::kTei, true, false, nothing},
                          {"/", "GET", ApiFamily::kTei, false, true, nothing},
                          {"/v1/models/{id}", "GET", ApiFamily::kOpenAI, false, false, nothing}});
  ASSERT_NE(table.Find("/", "HEAD"), nullptr);
  EXPECT_EQ(table.Find("/", "HEAD")->method, "GET");
  EXPECT_EQ(table.Find("/", "PUT"), nullptr);
  EXPECT_EQ(table.Methods("/"), "POST, GET");
  EXPECT_EQ(table.Find("/v1/models/", "GET"), nullptr);  // an empty id
  ASSERT_NE(table.Find("/v1/models/BAAI/bge-small-en-v1.5", "GET"), nullptr);
  EXPECT_EQ(table.FindPath("/v1/models/x")->family, ApiFamily::kOpenAI);
  EXPECT_EQ(table.FindPath("/v1/model"), nullptr);
  EXPECT_EQ(PathParameter("/v1/models/{id}", "/v1/models/BAAI/bge-small-en-v1.5"), "BAAI/bge-small-en-v1.5");
  EXPECT_EQ(PathParameter("/v1/models/{id}", "/v1/models/org%2Fname%20x%"), "org/name x%");
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

// --- Cohere v2, quantized embeddings, CORS, TEI's environment ---

// quantize_embeddings' rules written out again here (not gateway/quantize.h): int8 over the
// unit range [-1, 1] in float32, and sign bits packed big-endian 8 per byte.
std::vector<int64_t> Int8OfUnitVector(const std::vector<float>& values, int64_t offset) {
  std::vector<int64_t> out;
  const float step = (1.0f - -1.0f) / 255.0f;
  for (float value : values) {
    const float bucket = std::floor((value - -1.0f) / step);
    out.push_back(static_cast<int64_t>(std::min(255.0f, std::max(0.0f, bucket))) - offset);
  }
  return out;
}
std::vector<int64_t> PackedSigns(const std::vector<float>& values, int64_t offset) {
  std::vector<int64_t> out((values.size() + 7) / 8, 0);
  for (size_t i = 0; i < values.size(); ++i) out[i / 8] += values[i] > 0 ? (128 >> (i % 8)) : 0;
  for (int64_t& byte : out) byte -= offset;
  return out;
}
std::vector<int64_t> Integers(simdjson::dom::element element) {
  simdjson::dom::array array;
  EXPECT_EQ(element.get(array), simdjson::SUCCESS);
  std::vector<int64_t> values;
  for (simdjson::dom::element value : array) values.push_back(value.get_int64().value());
  return values;
}

TEST_F(GatewayTest, CohereV2EmbedAnswersEveryTypeFromTheEngineVector) {
  const std::vector<std::string> texts = {"Hello world", "stamen quantizes embeddings"};
  const auto answer = Post(served_->port(), "/v2/embed",
                           R"({"model": "m", "texts": ["Hello world", "stamen quantizes embeddings"], "input_type": "search_document",
                               "embedding_types": ["float", "int8", "uint8", "binary", "ubinary", "base64", "float"]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto root = Parse(parser_, answer.body);
  EXPECT_EQ(root["id"].get_string().value().size(), 36u);
  EXPECT_EQ(std::string_view(root["response_type"].get_string().value()), "embeddings_by_type");
  EXPECT_EQ(std::string_view(root["texts"].at(1).get_string().value()), texts[1]);
  auto embeddings = root["embeddings"].get_object().value();
  EXPECT_EQ(embeddings.size(), 6u);  // "float" asked twice, answered once
  size_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = served_->Encode(texts[i]);
    tokens += ids.size();
    const std::vector<float> expected = served_->Embed(ids);
    const std::vector<float> floats = Floats(embeddings["float"].at(i).value());
    ExpectNear(floats, expected);
    // The quantized vectors are of the answered floats, exactly.
    EXPECT_EQ(Integers(embeddings["int8"].at(i).value()), Int8OfUnitVector(floats, 128));
    EXPECT_EQ(Integers(embeddings["uint8"].at(i).value()), Int8OfUnitVector(floats, 0));
    EXPECT_EQ(Integers(embeddings["binary"].at(i).value()), PackedSigns(floats, 128));
    EXPECT_EQ(Integers(embeddings["ubinary"].at(i).value()), PackedSigns(floats, 0));
    EXPECT_EQ(Integers(embeddings["binary"].at(i).value()).size(), 48u);
    EXPECT_EQ(DecodeBase64Floats(embeddings["base64"].at(i).get_string().value()), floats);
  }
  EXPECT_EQ(root["meta"]["billed_units"]["input_tokens"].get_int64().value(), static_cast<int64_t>(tokens));
  EXPECT_EQ(std::string_view(root["meta"]["api_version"]["version"].get_string().value()), "2");

  // `inputs` of text content, output_dimension (Matryoshka), default type float.
  simdjson::dom::parser other;
  const auto cut = Post(served_->port(), "/v2/embed",
                        R"({"inputs": [{"content": [{"type": "text", "text": "matryoshka"}]}], "output_dimension": 64, "priority": 3})");
  ASSERT_EQ(cut.status, 200) << cut.body;
  auto cut_root = Parse(other, cut.body);
  ExpectNear(Floats(cut_root["embeddings"]["float"].at(0).value()),
             Renormalized(served_->Embed(served_->Encode("matryoshka"), {}, false), 64));
  EXPECT_EQ(cut_root["embeddings"]["int8"].error(), simdjson::NO_SUCH_FIELD);
}

TEST_F(GatewayTest, CohereV2EmbedTruncatesAsCohereSays) {
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "word" + std::to_string(i % 7) + " ";
  // END (Cohere's default) and START cut to the model's 256 tokens; NONE refuses.
  for (const std::string truncate : {"", "END", "START"}) {
    const std::string field = truncate.empty() ? "" : R"(, "truncate": ")" + truncate + "\"";
    const auto answer = Post(served_->port(), "/v2/embed", R"({"texts": [")" + long_text + "\"]" + field + "}");
    ASSERT_EQ(answer.status, 200) << truncate << ": " << answer.body;
    simdjson::dom::parser parser;
    const auto side = truncate == "START" ? tokenizer::TruncationSide::kLeft : tokenizer::TruncationSide::kRight;
    ExpectNear(Floats(Parse(parser, answer.body)["embeddings"]["float"].at(0).value()),
               served_->Embed(served_->Encode(long_text, 256, side)));
  }
  auto answer = Post(served_->port(), "/v2/embed", R"({"texts": [")" + long_text + R"("], "truncate": "NONE"})");
  EXPECT_EQ(answer.status, 422) << answer.body;
  ExpectErrorShape("/v2/embed", 422, answer.body);
  // max_tokens: a shorter cut.
  answer = Post(served_->port(), "/v2/embed", R"({"texts": [")" + long_text + R"("], "max_tokens": 10})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser parser;
  ExpectNear(Floats(Parse(parser, answer.body)["embeddings"]["float"].at(0).value()),
             served_->Embed(served_->Encode(long_text, 10)));
  answer = Post(served_->port(), "/v2/embed", R"({"texts": [")" + long_text + R"("], "max_tokens": 10, "truncate": "NONE"})");
  EXPECT_EQ(answer.status, 422);
  EXPECT_NE(answer.body.find("more than 'max_tokens' 10"), std::string::npos) << answer.body;
}

TEST_F(GatewayTest, QuantizedEmbeddingsOnOpenAIAndTei) {
  const auto floats = Post(served_->port(), "/v1/embeddings", R"({"input": "quantize me"})");
  ASSERT_EQ(floats.status, 200);
  const std::vector<float> vector = Floats(Parse(parser_, floats.body)["data"].at(0)["embedding"].value());
  for (const std::string type : {"int8", "uint8", "binary", "ubinary"}) {
    const std::vector<int64_t> expected = type == "int8"    ? Int8OfUnitVector(vector, 128)
                                          : type == "uint8" ? Int8OfUnitVector(vector, 0)
                                          : type == "binary" ? PackedSigns(vector, 128)
                                                             : PackedSigns(vector, 0);
    const auto openai = Post(served_->port(), "/v1/embeddings", R"({"input": "quantize me", "encoding_format": ")" + type + "\"}");
    ASSERT_EQ(openai.status, 200) << openai.body;
    simdjson::dom::parser openai_parser;
    EXPECT_EQ(Integers(Parse(openai_parser, openai.body)["data"].at(0)["embedding"].value()), expected) << type;
    const auto tei = Post(served_->port(), "/embed", R"({"inputs": "quantize me", "embedding_type": ")" + type + "\"}");
    ASSERT_EQ(tei.status, 200) << tei.body;
    simdjson::dom::parser tei_parser;
    EXPECT_EQ(Integers(Parse(tei_parser, tei.body).at(0).value()), expected) << type;
  }
  // Sign bits need no calibration: binary of unnormalized vectors is fine; int8 is not.
  EXPECT_EQ(Post(served_->port(), "/embed", R"({"inputs": "a", "normalize": false, "embedding_type": "binary"})").status, 200);
}

TEST_F(GatewayTest, CohereErrorsHaveCohereShape) {
  const std::vector<ErrorCase> cases = {
      {"/v2/embed", "{not json", 400, "not valid JSON"},
      {"/v2/embed", "{}", 400, "give one of 'texts' or 'inputs'"},
      {"/v2/embed", R"({"texts": ["a"], "inputs": []})", 400, "give one of 'texts' or 'inputs'"},
      {"/v2/embed", R"({"texts": []})", 400, "'texts' is empty"},
      {"/v2/embed", R"({"texts": "a"})", 400, "'texts' must be an array of strings"},
      {"/v2/embed", R"({"texts": ["a", ""]})", 400, "'texts'[1] is an empty string"},
      {"/v2/embed", R"({"texts": ["a"], "images": ["data:image/png;base64,AAAA"]})", 400, "text embedding models only"},
      {"/v2/embed", R"({"inputs": [{"content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})", 400,
       R"(stamen embeds only \"text\")"},
      {"/v2/embed", R"({"inputs": [{"content": []}]})", 400, "exactly one text part per input"},
      {"/v2/embed", R"({"texts": ["a"], "input_type": "image"})", 400, "text embedding models only"},
      {"/v2/embed", R"({"texts": ["a"], "input_type": "questions"})", 400, "'input_type' must be"},
      {"/v2/embed", R"({"texts": ["a"], "embedding_types": ["int4"]})", 400, "'embedding_types'[0] must be one of"},
      {"/v2/embed", R"({"texts": ["a"], "embedding_types": []})", 400, "'embedding_types' must be a non-empty array"},
      {"/v2/embed", R"({"texts": ["a"], "truncate": "MIDDLE"})", 400, R"('truncate' must be \"NONE\", \"START\" or \"END\")"},
      {"/v2/embed", R"({"texts": ["a"], "output_dimension": 385})", 400, "'output_dimension' 385 exceeds the model's 384"},
      {"/v2/embed", R"({"texts": ["a"], "output_dimension": 0})", 400, "'output_dimension' must be a positive integer"},
      {"/v2/embed", R"({"texts": ["a"], "priority": -1})", 400, "'priority' must be"},
      {"/v2/embed", R"({"texts": ["1","2","3","4","5","6","7","8","9"]})", 413, "batch of 9 texts exceeds --max-client-batch-size 8"},
      {"/v2/embed", R"({"texts": [")" + std::string(70 * 1024, 'a') + R"("]})", 413, "payload too large"},
      {"/v2/rerank", R"({"query": "q", "documents": ["a"]})", 400, "is an embedding model, not a reranker"},
      {"/v2/rerank", R"({"query": "q"})", 400, "missing 'documents'"},
      {"/v2/rerank", R"({"query": "q", "documents": ["a"], "max_tokens_per_doc": 0})", 400, "'max_tokens_per_doc' must be a positive integer"},
      {"/v2/rerank", R"({"query": "q", "documents": ["a"], "priority": "urgent"})", 400, "'priority' must be"},
      {"/v1/rerank", R"({"query": "q", "documents": []})", 400, "'documents' is empty"},
      {"/embed", R"({"inputs": "a", "embedding_type": "base64"})", 400, "'embedding_type' must be"},
      {"/embed", R"({"inputs": "a", "normalize": false, "embedding_type": "int8"})", 400, "calibrated to unit-length vectors"},
      {"/v1/embeddings", R"({"input": "a", "encoding_format": "int4"})", 400, "'encoding_format' must be"},
  };
  for (const ErrorCase& error : cases) {
    const auto answer = Post(served_->port(), error.path, error.body);
    EXPECT_EQ(answer.status, error.status) << error.path << " " << error.body.substr(0, 80) << ": " << answer.body;
    EXPECT_NE(answer.body.find(error.message), std::string::npos) << error.message << " in " << answer.body;
    ExpectErrorShape(error.path, error.status, answer.body);
  }
  const auto wrong_method = Http(served_->port(), "GET", "/v2/embed");
  EXPECT_EQ(wrong_method.status, 405);
  ExpectErrorShape("/v2/embed", 405, wrong_method.body);
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

// input_type picks the model's prompt: search_query "query", search_document "document".
TEST(GatewayCohereTest, InputTypeAppliesTheModelsPrompt) {
  const std::string folder = server::testing::ScratchFolder() + "/minilm-with-prompts";
  std::filesystem::remove_all(folder);
  std::filesystem::copy(Embedder(), folder, std::filesystem::copy_options::recursive);
  std::ofstream(folder + "/config_sentence_transformers.json")
      << R"({"prompts": {"query": "query: ", "document": "passage: ", "Clustering": "cluster: "}, "default_prompt_name": null})";
  Served served(folder);
  for (const auto& [input_type, prompt] : std::vector<std::pair<std::string, std::string>>{
           {"search_query", "query: "}, {"search_document", "passage: "}, {"clustering", "cluster: "}, {"classification", ""}}) {
    const auto answer = Post(served.port(), "/v2/embed", R"({"texts": ["what is stamen?"], "input_type": ")" + input_type + "\"}");
    ASSERT_EQ(answer.status, 200) << answer.body;
    simdjson::dom::parser parser;
    ExpectNear(Floats(Parse(parser, answer.body)["embeddings"]["float"].at(0).value()),
               served.Embed(served.Encode(prompt + "what is stamen?")));
  }
}

TEST(GatewayCorsTest, AllowedOriginsGetHeadersAndPreflights) {
  GatewayOptions options;
  options.cors_allow_origins = {"https://app.example", "https://other.example"};
  options.api_key = "s3cret";  // preflights carry no credentials: answered anyway
  options.payload_limit = 4096;
  Served served(Embedder(), options);
  const auto preflight = Http(served.port(), "OPTIONS", "/v2/embed", "",
                              {{"Origin", "https://app.example"}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(preflight.status, 204);
  EXPECT_EQ(preflight.Header("access-control-allow-origin"), "https://app.example");
  EXPECT_EQ(preflight.Header("access-control-allow-methods"), "POST");
  EXPECT_NE(preflight.Header("access-control-allow-headers").find("authorization"), std::string::npos);
  EXPECT_EQ(preflight.Header("vary"), "origin");
  const auto answer = Post(served.port(), "/v1/embeddings", R"({"input": "a"})",
                           {{"Origin", "https://other.example"}, {"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.Header("access-control-allow-origin"), "https://other.example");
  // Errors carry it too (a browser app could not read them otherwise).
  const auto refused = Post(served.port(), "/v1/embeddings", R"({"input": "a"})", {{"Origin", "https://app.example"}});
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.Header("access-control-allow-origin"), "https://app.example");
  // So do the errors the HTTP server answers before the gateway sees the request.
  const auto too_large = Post(served.port(), "/embed", R"({"inputs": ")" + std::string(8192, 'a') + R"("})",
                              {{"Origin", "https://app.example"}, {"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(too_large.status, 413);
  EXPECT_EQ(too_large.Header("access-control-allow-origin"), "https://app.example");
  EXPECT_NE(too_large.body.find("\"error_type\""), std::string::npos) << too_large.body;  // TEI's shape
  // Another origin: no CORS headers, so the browser refuses the answer.
  const auto foreign = Http(served.port(), "OPTIONS", "/v2/embed", "", {{"Origin", "https://evil.example"}});
  EXPECT_EQ(foreign.status, 204);
  EXPECT_TRUE(foreign.Header("access-control-allow-origin").empty());
  EXPECT_TRUE(foreign.Header("access-control-allow-methods").empty());
  EXPECT_EQ(Http(served.port(), "OPTIONS", "/nowhere", "", {{"Origin", "https://app.example"}}).status, 404);

  GatewayOptions any;
  any.cors_allow_origins = {"*"};
  Served open(Embedder(), any);
  const auto star = Post(open.port(), "/embed", R"({"inputs": "a"})", {{"Origin", "https://anyone.example"}});
  EXPECT_EQ(star.Header("access-control-allow-origin"), "*");
  // No Origin (not a browser): no CORS headers.
  EXPECT_TRUE(Post(open.port(), "/embed", R"({"inputs": "a"})").Header("access-control-allow-origin").empty());
}

// `stamen serve` configured by TEI's environment variables alone (as TEI's Docker image is),
// logging JSON lines; HOSTNAME (Docker's container name) leaves it on loopback.
TEST(ServeCommandTest, TakesTeisEnvironmentVariables) {
  const std::string folder = server::testing::ScratchFolder() + "/env-serve";
  std::filesystem::create_directories(folder);
  const std::string log = folder + "/log", pid_file = folder + "/pid";
  std::filesystem::remove(log);
  const std::string command = "MODEL_ID='" + Embedder() + "' SERVED_MODEL_NAME=from-env PORT=0 HOSTNAME=a-container-id "
                              "MAX_CLIENT_BATCH_SIZE=3 AUTO_TRUNCATE=true JSON_OUTPUT=true CORS_ALLOW_ORIGIN=https://a.example,https://b.example "
                              "API_KEY=env-key '" + std::string(STAMEN_CLI) + "' serve --threads 1 2> '" + log +
                              "' & echo $! > '" + pid_file + "'";
  ASSERT_EQ(std::system(command.c_str()), 0);
  int pid = 0;
  for (int attempt = 0; attempt < 50 && pid == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream(pid_file) >> pid;
  }
  ASSERT_GT(pid, 0);
  struct Stopper {
    int pid;
    ~Stopper() { kill(pid, SIGTERM); }  // also when an assertion below ends the test
  } stopper{pid};
  int port = 0;
  std::string line;
  for (int attempt = 0; attempt < 600 && port == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream lines(log);
    while (std::getline(lines, line)) {
      const size_t at = line.find("on http://127.0.0.1:");
      if (at != std::string::npos) {
        port = std::atoi(line.c_str() + at + std::strlen("on http://127.0.0.1:"));
        break;
      }
    }
  }
  ASSERT_GT(port, 0) << "no port in the log";
  // The log line is one JSON object.
  simdjson::dom::parser log_parser;
  auto entry = Parse(log_parser, line);
  EXPECT_EQ(std::string_view(entry["level"].get_string().value()), "INFO");
  EXPECT_NE(std::string_view(entry["message"].get_string().value()).find("from-env"), std::string_view::npos);
  EXPECT_EQ(std::string_view(entry["timestamp"].get_string().value()).back(), 'Z');

  const std::vector<std::pair<std::string, std::string>> key = {{"Authorization", "Bearer env-key"}};
  EXPECT_EQ(Http(port, "GET", "/info").status, 401);  // API_KEY
  simdjson::dom::parser info_parser;
  auto info = Parse(info_parser, Http(port, "GET", "/info", "", key).body);
  EXPECT_EQ(std::string_view(info["model_id"].get_string().value()), "from-env");
  EXPECT_EQ(info["max_client_batch_size"].get_int64().value(), 3);
  EXPECT_TRUE(info["auto_truncate"].get_bool().value());
  auto with_origin = key;
  with_origin.emplace_back("Origin", "https://b.example");
  EXPECT_EQ(Http(port, "GET", "/v1/models", "", with_origin).Header("access-control-allow-origin"), "https://b.example");
}

// `--model-id` is TEI's: the model. Given beside a different --model (its old meaning, the
// served name), the error says where the name goes now.
TEST(ServeCommandTest, ModelIdIsTheModel) {
  const std::string log = server::testing::ScratchFolder() + "/model-id.log";
  const std::string command = "'" + std::string(STAMEN_CLI) + "' serve --model '" + Embedder() +
                              "' --model-id my-name --port 0 2> '" + log + "'";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  EXPECT_NE(text.str().find("name the served model with --served-model-name"), std::string::npos) << text.str();
}

// A pooling the model cannot do is refused at start, before the model is loaded, as `stamen
// embed` refuses it (issue 45: serve started, then failed every request).
TEST(ServeCommandTest, RefusesSpladeOnAModelWithoutAMaskedLmHead) {
  const std::string log = server::testing::ScratchFolder() + "/splade-refused.log";
  for (const std::string command : {"serve --threads 1", "gateway --workers 127.0.0.1:1"}) {
    const std::string line = "'" + std::string(STAMEN_CLI) + "' " + command + " --model '" + Embedder() +
                             "' --pooling splade --port 0 2> '" + log + "'";
    const int status = std::system(line.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << command << ": " << status;
    std::stringstream text;
    text << std::ifstream(log).rdbuf();
    EXPECT_NE(text.str().find("BertModel has no masked-LM head: splade pooling needs a …ForMaskedLM model"),
              std::string::npos) << text.str();
    EXPECT_EQ(text.str().find("warmed up"), std::string::npos) << command << ": the model was loaded first";
  }
}

// A port another process listens on, for as long as it lives.
class BusyPort {
 public:
  BusyPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), length) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~BusyPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Runs `stamen ARGUMENTS`; its exit code and stderr.
std::pair<int, std::string> RunCli(const std::string& arguments) {
  const std::string log = server::testing::ScratchFolder() + "/cli.log";
  const int status = std::system(("'" + std::string(STAMEN_CLI) + "' " + arguments + " 2> '" + log + "'").c_str());
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

// At start: a line with the version and the settings given (secrets hidden), timestamps with
// their zone, and a busy port reported before the model is loaded (issue 45).
TEST(ServeCommandTest, StartLineAndABusyPortBeforeTheModelLoads) {
  BusyPort busy;
  ASSERT_GT(busy.port(), 0);
  const std::string port = std::to_string(busy.port());
  for (const std::string command : {"serve --threads 1 --api-key s3cret --port " + port,
                                    "gateway --workers 127.0.0.1:1 --api-key s3cret --port " + port,
                                    "worker --threads 1 --listen 127.0.0.1:" + port}) {
    const auto [code, log] = RunCli(command + " --model '" + Embedder() + "'");
    EXPECT_EQ(code, 2) << command << "\n" << log;
    EXPECT_NE(log.find("cannot listen on 127.0.0.1:" + port + ": Address already in use"), std::string::npos)
        << command << "\n" << log;
    EXPECT_EQ(log.find("warmed up"), std::string::npos) << command << ": the model was loaded first\n" << log;
    const std::string name = command.substr(0, command.find(' '));
    EXPECT_NE(log.find(std::string("stamen ") + STAMEN_VERSION + " " + name + ": "), std::string::npos) << log;
    EXPECT_NE(log.find("--model="), std::string::npos) << log;
    EXPECT_EQ(log.find("s3cret"), std::string::npos) << "the API key was logged:\n" << log;
    // 2026-12-05T13:46:57.363+00:00 info …
    EXPECT_TRUE(std::regex_search(log, std::regex(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d info )")))
        << log;
  }
}

// `worker --model-id` is the model, as for serve and gateway; beside --model it is still the
// served name, with a line saying it is deprecated.
TEST(WorkerCommandTest, ModelIdIsTheModelAndTheOldMeaningIsDeprecated) {
  BusyPort busy;  // each run stops at the busy port, after reading its model flags
  const std::string listen = " --listen 127.0.0.1:" + std::to_string(busy.port());
  auto [code, log] = RunCli("worker --model-id '" + Embedder() + "'" + listen);
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("Address already in use"), std::string::npos) << log;
  std::tie(code, log) = RunCli("worker --model '" + Embedder() + "' --model-id my-name" + listen);
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("is taken as the served name, its old meaning; it is deprecated: use --served-model-name my-name"),
            std::string::npos) << log;
  std::tie(code, log) = RunCli("worker" + listen);
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("no model: give --model (or --model-id)"), std::string::npos) << log;
}


// A static embedding model (issue 44) through the embedding routes: TEI's /embed (raw and
// normalised), OpenAI's /v1/embeddings and Cohere's /v2/embed give model2vec's own
// StaticModel.encode vectors (tests/engine/data/tiny-model2vec/reference.json, written by
// tools/make_static_goldens.py), texts with unknown tokens, with none known and past max_length
// included; /info says what the folder is.
TEST(StaticEmbeddingServingTest, EmbeddingRoutesGiveModel2VecVectors) {
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-model2vec";
  Served served(folder);
  simdjson::dom::parser reference_parser;
  simdjson::dom::element reference = reference_parser.load(folder + "/reference.json");
  std::string texts = "[";
  std::vector<std::vector<float>> raw, normalized;
  for (simdjson::dom::element text : reference["texts"].get_array()) {
    if (texts.size() > 1) texts += ",";
    AppendJsonString(texts, std::string_view(text));
  }
  texts += "]";
  for (simdjson::dom::element row : reference["raw"].get_array()) raw.push_back(Floats(row));
  for (simdjson::dom::element row : reference["normalized"].get_array()) normalized.push_back(Floats(row));
  const auto expect_rows = [&](simdjson::dom::array rows, const std::vector<std::vector<float>>& expected,
                               const std::string& route) {
    ASSERT_EQ(rows.size(), expected.size()) << route;
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(route + ": text " + std::to_string(i));
      ExpectNear(Floats(rows.at(i).value()), expected[i], 1e-4);
    }
  };
  simdjson::dom::parser parser;
  auto answer = Post(served.port(), "/embed", R"({"inputs": )" + texts + R"(, "normalize": false})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  expect_rows(Parse(parser, answer.body).get_array().value(), raw, "/embed raw");
  answer = Post(served.port(), "/embed", R"({"inputs": )" + texts + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  expect_rows(Parse(parser, answer.body).get_array().value(), normalized, "/embed");
  answer = Post(served.port(), "/v1/embeddings", R"({"input": )" + texts + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  {
    simdjson::dom::array data = Parse(parser, answer.body)["data"].get_array().value();
    ASSERT_EQ(data.size(), normalized.size());
    for (size_t i = 0; i < normalized.size(); ++i) {
      SCOPED_TRACE("/v1/embeddings: text " + std::to_string(i));
      ExpectNear(Floats(data.at(i)["embedding"].value()), normalized[i], 1e-4);
    }
  }
  answer = Post(served.port(), "/v2/embed",
                R"({"texts": )" + texts + R"(, "input_type": "search_document", "embedding_types": ["float"]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  expect_rows(Parse(parser, answer.body)["embeddings"]["float"].get_array().value(), normalized, "/v2/embed");

  answer = Http(served.port(), "GET", "/info");
  ASSERT_EQ(answer.status, 200);
  auto info = Parse(parser, answer.body);
  EXPECT_EQ(std::string_view(info["architecture"].get_string().value()), "StaticModel");
  EXPECT_EQ(info["dimensions"].get_int64().value(), 24);
  EXPECT_EQ(info["max_input_length"].get_int64().value(), 16);  // model2vec's max_length
  EXPECT_EQ(std::string_view(info["model_type"]["embedding"]["pooling"].get_string().value()), "mean");
}

}  // namespace
}  // namespace stamen::gateway
