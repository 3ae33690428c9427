// The fixture of the gateway's route tests (gateway_test.cc, embed_routes_test.cc,
// late_chunking_routes_test.cc, tei_routes_test.cc, rerank_routes_test.cc,
// cohere_routes_test.cc, serve_command_test.cc): `stamen serve`'s gateway over real HTTP on
// loopback, with an in-process worker on a one-layer random model that has the real
// all-MiniLM-L6-v2 (WordPiece) or XLM-R tokenizer, and the engine and tokenizer run directly in
// the test, whose answers the routes' are compared with; the error shapes each API family's
// clients parse.
#pragma once

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

inline std::string Embedder() { return server::testing::MakeModel("all-MiniLM-L6-v2", 30522); }

// A BERT classifier with three labels (LABEL_0, LABEL_1, LABEL_2) and the real tokenizer.
inline std::string ThreeLabelClassifier() {
  const std::string out = server::testing::ScratchFolder() + "/ms-marco-3-labels";
  if (!std::filesystem::exists(out + "/config.json")) {
    const std::string command = std::string("'") + STAMEN_CLI + "' make-model --like ms-marco-MiniLM-L6-v2 --random-seed 5 "
                                "--layers 1 --labels 3 --out '" + out + "' > /dev/null 2>&1";
    if (std::system(command.c_str()) != 0) return "";
  }
  return out;
}

inline double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, a_squares = 0, b_squares = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    a_squares += double(a[i]) * a[i];
    b_squares += double(b[i]) * b[i];
  }
  return dot / std::sqrt(a_squares * b_squares);
}

inline double Sigmoid(double logit) { return 1 / (1 + std::exp(-logit)); }

inline simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& body) {
  simdjson::dom::element root;
  EXPECT_EQ(parser.parse(body).get(root), simdjson::SUCCESS) << body;
  return root;
}

inline std::vector<float> Floats(simdjson::dom::element element) {
  // A named array: iterating `get_array().value()` would iterate a temporary that is gone.
  simdjson::dom::array array;
  EXPECT_EQ(element.get(array), simdjson::SUCCESS);
  std::vector<float> values;
  for (simdjson::dom::element value : array) values.push_back(static_cast<float>(value.get_double().value()));
  return values;
}

inline void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected, double tolerance = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) ASSERT_NEAR(actual[i], expected[i], tolerance) << "component " << i;
}

inline std::vector<float> Renormalized(std::vector<float> values, size_t keep) {
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
  static inline Served* served_ = nullptr;
  simdjson::dom::parser parser_;
};

struct ErrorCase {
  std::string path, body;
  int status;
  std::string message;
};

inline bool IsTeiRoute(const std::string& path) {
  return path == "/" || path == "/embed" || path == "/rerank" || path == "/tokenize" || path == "/predict" ||
         path == "/similarity" || path == "/decode" || path == "/invocations" || path == "/health" || path == "/ping";
}

inline bool IsCohereRoute(const std::string& path) { return path == "/v1/rerank" || path.rfind("/v2/", 0) == 0; }

// The body is the error shape of the route's API: TEI's {"error": "…", "error_type"} or
// OpenAI's {"error": {"message", "type", "param", "code"}}.
inline void ExpectErrorShape(const std::string& path, int status, const std::string& body, const std::string& tei_type = "") {
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

inline void ExpectErrorShapeOf(const std::string& path, const testing::HttpAnswer& answer) {
  ExpectErrorShape(path, answer.status, answer.body);
}

// quantize_embeddings' rules written out again here (not gateway/quantize.h): int8 over the
// unit range [-1, 1] in float32, and sign bits packed big-endian 8 per byte.
inline std::vector<int64_t> Int8OfUnitVector(const std::vector<float>& values, int64_t offset) {
  std::vector<int64_t> out;
  const float step = (1.0f - -1.0f) / 255.0f;
  for (float value : values) {
    const float bucket = std::floor((value - -1.0f) / step);
    out.push_back(static_cast<int64_t>(std::min(255.0f, std::max(0.0f, bucket))) - offset);
  }
  return out;
}

inline std::vector<int64_t> PackedSigns(const std::vector<float>& values, int64_t offset) {
  std::vector<int64_t> out((values.size() + 7) / 8, 0);
  for (size_t i = 0; i < values.size(); ++i) out[i / 8] += values[i] > 0 ? (128 >> (i % 8)) : 0;
  for (int64_t& byte : out) byte -= offset;
  return out;
}

inline std::vector<int64_t> Integers(simdjson::dom::element element) {
  simdjson::dom::array array;
  EXPECT_EQ(element.get(array), simdjson::SUCCESS);
  std::vector<int64_t> values;
  for (simdjson::dom::element value : array) values.push_back(value.get_int64().value());
  return values;
}

}  // namespace stamen::gateway
