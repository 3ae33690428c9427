// GET /openapi.json, /api-doc/openapi.json and /docs of a real gateway: the description names
// exactly the routes of the gateway's route table (a route added without its description fails
// here), with each route's method, API-key requirement and error shape; the page is
// self-contained.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "gateway/model_router.h"
#include "gateway/in_process_backend.h"
#include "server/local_worker.h"
#include "tests/gateway/http_client.h"
#include "tests/server/test_models.h"

namespace stamen::gateway {
namespace {

using testing::Http;

// A gateway with an in-process worker on a one-layer MiniLM, started with an API key so that
// the open routes can be told from the others.
class OpenApiTest : public ::testing::Test {
 protected:
  static constexpr const char* kApiKey = "openapi-test-key";

  static void SetUpTestSuite() {
    registry_ = new metrics::Registry();
    const std::string model_dir = server::testing::MakeModel("all-MiniLM-L6-v2", 30522);
    server::LocalWorkerOptions worker_options;
    worker_options.model_dir = model_dir;
    worker_options.engine.num_threads = 1;
    auto worker = server::LocalWorker::Load(worker_options, *registry_);
    ASSERT_TRUE(worker.ok()) << worker.status().message();
    worker_ = worker.value().release();
    GatewayOptions options;
    options.model_dir = model_dir;
    options.model_id = "org/a \"quoted\" model";  // escaped into the document's JSON
    options.port = 0;
    options.tokenization_workers = 1;
    options.api_key = kApiKey;
    options.in_process_worker = std::make_shared<InProcessBackend>(*worker_);
    auto gateway = ModelRouter::Start({options}, *registry_);
    ASSERT_TRUE(gateway.ok()) << gateway.status().message();
    gateway_ = gateway.value().release();
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    delete registry_;
  }

  // GET /openapi.json without the key (it is open), parsed.
  simdjson::dom::element Document() {
    answer_ = Http(gateway_->port(), "GET", "/openapi.json");
    EXPECT_EQ(answer_.status, 200) << answer_.body;
    simdjson::dom::element root;
    EXPECT_EQ(parser_.parse(answer_.body).get(root), simdjson::SUCCESS) << answer_.body.substr(0, 300);
    return root;
  }

  static metrics::Registry* registry_;
  static server::LocalWorker* worker_;
  static ModelRouter* gateway_;
  testing::HttpAnswer answer_;
  simdjson::dom::parser parser_;
};
metrics::Registry* OpenApiTest::registry_ = nullptr;
server::LocalWorker* OpenApiTest::worker_ = nullptr;
ModelRouter* OpenApiTest::gateway_ = nullptr;

std::string Upper(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

std::string Join(const std::set<std::string>& items) {
  std::string joined;
  for (const std::string& item : items) joined += "\n  " + item;
  return joined.empty() ? " none" : joined;
}

TEST_F(OpenApiTest, DescribesExactlyTheRouteTable) {
  simdjson::dom::element root = Document();
  EXPECT_EQ(std::string_view(root["openapi"].get_string().value()), "3.1.0");
  std::set<std::string> described;
  simdjson::dom::object paths = root["paths"].get_object().value();
  for (auto [path, operations] : paths) {
    // A named object: iterating `get_object().value()` would iterate a temporary that is gone.
    simdjson::dom::object methods = operations.get_object().value();
    for (auto [method, operation] : methods) {
      described.insert(Upper(method) + " " + std::string(path));
    }
  }
  std::set<std::string> served;
  for (const Route& route : gateway_->default_model().routes().routes()) served.insert(route.method + " " + route.path);
  std::set<std::string> undescribed, unserved;
  std::set_difference(served.begin(), served.end(), described.begin(), described.end(),
                      std::inserter(undescribed, undescribed.end()));
  std::set_difference(described.begin(), described.end(), served.begin(), served.end(),
                      std::inserter(unserved, unserved.end()));
  EXPECT_TRUE(undescribed.empty()) << "routes of the route table missing from src/gateway/openapi.json:" << Join(undescribed);
  EXPECT_TRUE(unserved.empty()) << "operations of src/gateway/openapi.json the gateway does not serve:" << Join(unserved);
  EXPECT_GE(served.size(), 21u);
}

TEST_F(OpenApiTest, EachOperationSaysItsKeyRuleAndErrorShape) {
  simdjson::dom::element root = Document();
  const std::map<ApiFamily, std::string> error_response = {{ApiFamily::kOpenAI, "#/components/responses/OpenAIError"},
                                                           {ApiFamily::kTei, "#/components/responses/TeiError"},
                                                           {ApiFamily::kCohere, "#/components/responses/CohereError"}};
  for (const Route& route : gateway_->default_model().routes().routes()) {
    std::string method = route.method;
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    simdjson::dom::element operation;
    if (root["paths"][route.path][method].get(operation) != simdjson::SUCCESS) continue;  // reported above
    const std::string name = route.method + " " + route.path;
    // "security": [] marks the routes that never need the key.
    simdjson::dom::array security;
    const bool open = operation["security"].get(security) == simdjson::SUCCESS && security.size() == 0;
    EXPECT_EQ(open, route.open) << name;
    simdjson::dom::object responses = operation["responses"].get_object().value();
    bool has_429 = false, has_401 = false;
    for (auto [status, response] : responses) {
      has_429 |= status == "429";
      has_401 |= status == "401";
      if (status.front() == '2') continue;
      std::string_view reference;
      ASSERT_EQ(response["$ref"].get(reference), simdjson::SUCCESS) << name << " " << status;
      EXPECT_EQ(reference, error_response.at(route.family)) << name << " " << status;
      // TEI answers a failed inference with 424, the others with 500.
      if (status == "500") {
        EXPECT_NE(route.family, ApiFamily::kTei) << name;
      }
      if (status == "424") {
        EXPECT_EQ(route.family, ApiFamily::kTei) << name;
      }
    }
    EXPECT_EQ(has_429, route.work) << name << ": work routes answer 429 when overloaded";
    EXPECT_EQ(has_401, !route.open) << name << ": routes behind the key answer 401";
  }
}

TEST_F(OpenApiTest, IsFilledInAndOpen) {
  simdjson::dom::element root = Document();
  EXPECT_EQ(answer_.Header("content-type"), "application/json");
  EXPECT_EQ(std::string_view(root["info"]["version"].get_string().value()), STAMEN_VERSION);
  EXPECT_EQ(answer_.body.find("${"), std::string::npos) << "a placeholder is left";
  std::string_view example;
  ASSERT_EQ(root["paths"]["/v1/models/{id}"]["get"]["parameters"].at(0)["example"].get(example), simdjson::SUCCESS);
  EXPECT_EQ(example, "org/a \"quoted\" model");
  const auto tei = Http(gateway_->port(), "GET", "/api-doc/openapi.json");
  EXPECT_EQ(tei.status, 200);
  EXPECT_EQ(tei.body, answer_.body);
  // The other routes still need the key.
  EXPECT_EQ(Http(gateway_->port(), "GET", "/info").status, 401);
  EXPECT_EQ(Http(gateway_->port(), "GET", "/info", "", {{"authorization", std::string("Bearer ") + kApiKey}}).status, 200);
}

TEST_F(OpenApiTest, DocsPageIsSelfContainedHtml) {
  const auto page = Http(gateway_->port(), "GET", "/docs");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.Header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(page.body.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(page.body.find("fetch(\"/openapi.json\""), std::string::npos);
  // Works offline: nothing is loaded from elsewhere.
  for (const char* external : {"src=\"http", "href=\"http", "src=\"//", "href=\"//", "@import", "url("}) {
    EXPECT_EQ(page.body.find(external), std::string::npos) << external;
  }
  EXPECT_EQ(page.body.find("</html>"), page.body.size() - std::string_view("</html>\n").size());
}

}  // namespace
}  // namespace stamen::gateway
