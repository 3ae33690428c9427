// The gateway's own answers over real HTTP (gateway_fixture.h): /v1/models, every error class
// with its status, message and API family's shape, the API key, priorities, the concurrency
// limit (429), the route table and CORS.
#include "tests/gateway/gateway_fixture.h"

namespace stamen::gateway {
namespace {

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

}  // namespace
}  // namespace stamen::gateway
