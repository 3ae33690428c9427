// Several models behind one ModelRouter, over real HTTP on loopback: which model answers (the
// "model" field, the /models/{name}/ prefix with names that hold '/', the default), that an
// unknown model is refused only after the API key, /v1/models, /health while one model has no
// healthy worker, and /metrics labelled by model; and a router of one model, which serves
// `stamen serve` with one model as it did alone. The answers themselves are compared with the
// single-model CLI by multi_model_client_test.py.
#include "gateway/model_router.h"
#include "gateway/in_process_backend.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <thread>

#include "server/local_worker.h"
#include "tests/gateway/http_client.h"
#include "tests/server/test_models.h"

namespace stamen::gateway {
namespace {

using testing::Http;
using testing::Post;

// An in-process worker on a one-layer MiniLM with the real tokenizer.
StatusOr<std::unique_ptr<server::LocalWorker>> LoadWorker(metrics::Registry& registry) {
  server::LocalWorkerOptions options;
  options.model_dir = server::testing::MakeModel("all-MiniLM-L6-v2", 30522);
  options.scheduler = {.max_batch_tokens = 512, .max_batch_sequences = 64, .max_queued_tokens = 1 << 20};
  options.engine.num_threads = 1;
  return server::LocalWorker::Load(options, registry);
}

class ModelRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto worker = LoadWorker(registry_);
    ASSERT_TRUE(worker.ok()) << worker.status().message();
    worker_ = std::move(worker.value());

    GatewayOptions first;
    first.model_dir = server::testing::MakeModel("all-MiniLM-L6-v2", 30522);
    first.model_id = "org/mini";
    first.port = 0;
    first.tokenization_workers = 1;
    first.api_key = "secret";
    first.in_process_worker = std::make_shared<InProcessBackend>(*worker_);
    first.dispatcher.chunk_tokens = 512;
    // The same worker under a longer name that starts with the first's, and a model whose only
    // worker never answers.
    GatewayOptions second = first;
    second.model_id = "org/mini/v2";
    GatewayOptions down = first;
    down.model_id = "down";
    down.in_process_worker.reset();
    down.worker_addresses = {"127.0.0.1:1"};
    down.dispatcher.health_interval = std::chrono::milliseconds(100);
    auto router = ModelRouter::Start({first, second, down}, registry_);
    ASSERT_TRUE(router.ok()) << router.status().message();
    router_ = std::move(router.value());
  }
  void TearDown() override {
    if (router_) router_->Shutdown(std::chrono::seconds(5));
  }

  testing::HttpAnswer Embed(const std::string& path, const std::string& body, bool with_key = true) {
    if (!with_key) return Post(router_->port(), path, body);
    return Post(router_->port(), path, body, {{"authorization", "Bearer secret"}});
  }
  // The "model" an OpenAI answer names.
  static std::string AnsweredModel(const testing::HttpAnswer& answer) {
    simdjson::dom::parser parser;
    std::string_view model;
    if (parser.parse(answer.body).at_key("model").get(model) != simdjson::SUCCESS) return "";
    return std::string(model);
  }

  metrics::Registry registry_;
  std::unique_ptr<server::LocalWorker> worker_;
  std::unique_ptr<ModelRouter> router_;
};

TEST_F(ModelRouterTest, TheModelFieldAndThePathPrefixPickTheModel) {
  auto answer = Embed("/v1/embeddings", R"({"input": "hello", "model": "org/mini/v2"})");
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(AnsweredModel(answer), "org/mini/v2");
  // TEI's /embed has no model field: the longest served name the path starts with.
  answer = Embed("/models/org/mini/v2/embed", R"({"inputs": "hello"})");
  EXPECT_EQ(answer.status, 200) << answer.body;
  answer = Http(router_->port(), "GET", "/models/org/mini/v2/info", "", {{"authorization", "Bearer secret"}});
  EXPECT_NE(answer.body.find(R"("model_id":"org/mini/v2")"), std::string::npos) << answer.body;
  answer = Http(router_->port(), "GET", "/models/org/mini/info", "", {{"authorization", "Bearer secret"}});
  EXPECT_NE(answer.body.find(R"("model_id":"org/mini")"), std::string::npos) << answer.body;
  // No model named: the first.
  answer = Http(router_->port(), "GET", "/info", "", {{"authorization", "Bearer secret"}});
  EXPECT_NE(answer.body.find(R"("model_id":"org/mini")"), std::string::npos) << answer.body;
}

TEST_F(ModelRouterTest, AnUnknownModelIsRefusedAfterTheApiKeyInItsRoutesShape) {
  auto answer = Embed("/v1/embeddings", R"({"input": "hello", "model": "gpt-4"})", false);
  EXPECT_EQ(answer.status, 401) << answer.body;
  answer = Embed("/v1/embeddings", R"({"input": "hello", "model": "gpt-4"})");
  EXPECT_EQ(answer.status, 404);
  EXPECT_EQ(answer.body, R"({"error":{"message":"the model 'gpt-4' does not exist; this server serves 'org/mini', )"
                         R"('org/mini/v2', 'down'","type":"invalid_request_error","param":null,"code":"model_not_found"}})");
  answer = Embed("/models/gpt-4/embed", R"({"inputs": "hello"})");
  EXPECT_EQ(answer.status, 404);
  EXPECT_NE(answer.body.find(R"("error_type":"Validation")"), std::string::npos) << answer.body;  // TEI's shape
  answer = Http(router_->port(), "GET", "/v1/models/gpt-4", "", {{"authorization", "Bearer secret"}});
  EXPECT_EQ(answer.status, 404);
  EXPECT_NE(answer.body.find("model_not_found"), std::string::npos) << answer.body;
}

TEST_F(ModelRouterTest, ModelsListsEveryModelAndEachCanBeRetrieved) {
  auto answer = Http(router_->port(), "GET", "/v1/models", "", {{"authorization", "Bearer secret"}});
  ASSERT_EQ(answer.status, 200);
  simdjson::dom::parser parser;
  simdjson::dom::array models;
  ASSERT_EQ(parser.parse(answer.body)["data"].get(models), simdjson::SUCCESS) << answer.body;
  std::vector<std::string> ids;
  for (simdjson::dom::element model : models) ids.emplace_back(model["id"].get_string().value());
  EXPECT_EQ(ids, (std::vector<std::string>{"org/mini", "org/mini/v2", "down"}));
  answer = Http(router_->port(), "GET", "/v1/models/org/mini/v2", "", {{"authorization", "Bearer secret"}});
  EXPECT_EQ(answer.status, 200) << answer.body;
}

TEST_F(ModelRouterTest, HealthSaysWhichModelCannotServe) {
  // The unreachable worker is marked down by its first health checks.
  testing::HttpAnswer answer;
  for (int i = 0; i < 50 && answer.body.find("degraded") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    answer = Http(router_->port(), "GET", "/health");
  }
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, R"({"status":"degraded","unavailable":["down"]})");
  EXPECT_EQ(Http(router_->port(), "GET", "/ready").body, answer.body);  // readiness, under its probe's name
  EXPECT_EQ(Http(router_->port(), "GET", "/models/org/mini/health").status, 200);
  answer = Http(router_->port(), "GET", "/models/down/health");
  EXPECT_EQ(answer.status, 503);
  EXPECT_EQ(Http(router_->port(), "GET", "/models/down/ready").status, 503);
  // Liveness is the process's, not the workers': 200 without the API key while "down" has no
  // worker, on the server and under that model's path alike.
  for (const std::string path : {"/live", "/models/down/live"}) {
    answer = Http(router_->port(), "GET", path);
    EXPECT_EQ(answer.status, 200) << path;
    EXPECT_EQ(answer.body, R"({"status":"ok"})") << path;
  }
  // A model without a healthy worker fails alone.
  answer = Embed("/v1/embeddings", R"({"input": "hello", "model": "down"})");
  EXPECT_EQ(answer.status, 503) << answer.body;
  EXPECT_EQ(Embed("/v1/embeddings", R"({"input": "hello", "model": "org/mini"})").status, 200);
}

TEST(ModelMetricLabels, EscapeTheNameAsPrometheusRequires) {
  EXPECT_EQ(ModelMetricLabels("org/mini"), R"(model="org/mini")");
  EXPECT_EQ(ModelMetricLabels("a\"b\\c\nd"), R"(model="a\"b\\c\nd")");
}

TEST_F(ModelRouterTest, MetricsAreLabelledByModel) {
  ASSERT_EQ(Embed("/v1/embeddings", R"({"input": "hello", "model": "org/mini/v2"})").status, 200);
  const std::string metrics = Http(router_->port(), "GET", "/metrics", "", {{"authorization", "Bearer secret"}}).body;
  const std::string tokens = R"(stamen_gateway_tokens_total{model="org/mini/v2"} )";
  const size_t line = metrics.find(tokens);
  ASSERT_NE(line, std::string::npos) << metrics;
  EXPECT_GT(std::stoi(metrics.substr(line + tokens.size())), 0) << metrics;
  EXPECT_NE(metrics.find(R"(stamen_gateway_tokens_total{model="org/mini"} 0)"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(stamen_gateway_responses_total{model="org/mini/v2",route="/v1/embeddings",status="200"} 1)"),
            std::string::npos)
      << metrics;
}

TEST_F(ModelRouterTest, AnotherMethodOnAHealthPathIsTheRoutesToAnswer) {
  // Only GET and HEAD are health probes; PUT / is the routes' 405, naming the methods / takes.
  const auto answer = Http(router_->port(), "PUT", "/", "", {{"authorization", "Bearer secret"}});
  EXPECT_EQ(answer.status, 405) << answer.body;
  EXPECT_NE(answer.body.find("/ takes"), std::string::npos) << answer.body;
}

// One model alone: any "model" a body names is answered (OpenAI clients send their own), and
// its metrics carry no model label, as a single model's server always did.
TEST(RouterOfOne, AnswersAnyModelNameAndLabelsNoMetric) {
  metrics::Registry registry;
  auto worker = LoadWorker(registry);
  ASSERT_TRUE(worker.ok()) << worker.status().message();
  GatewayOptions options;
  options.model_dir = server::testing::MakeModel("all-MiniLM-L6-v2", 30522);
  options.model_id = "org/mini";
  options.port = 0;
  options.tokenization_workers = 1;
  options.in_process_worker = std::make_shared<InProcessBackend>(**worker);
  auto router = ModelRouter::Start({options}, registry);
  ASSERT_TRUE(router.ok()) << router.status().message();
  const uint16_t port = (*router)->port();
  auto answer = Post(port, "/v1/embeddings", R"({"input": "hello", "model": "text-embedding-3-small"})");
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(Post(port, "/models/org/mini/embed", R"({"inputs": "hello"})").status, 200);
  answer = Http(port, "GET", "/health");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, R"({"status":"ok"})");
  const std::string metrics = Http(port, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("stamen_gateway_responses_total{route=\"/v1/embeddings\",status=\"200\"} 1"), std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("model=\""), std::string::npos) << metrics;
  (*router)->Shutdown(std::chrono::seconds(5));
}

}  // namespace
}  // namespace stamen::gateway
