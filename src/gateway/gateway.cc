#include "gateway/gateway.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "gateway/api_key.h"
#include "gateway/openapi.h"
#include "gateway/route_handlers.h"

namespace stamen::gateway {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kVersion = STAMEN_VERSION;  // CMake's project version

double Milliseconds(Clock::duration duration) { return std::chrono::duration<double, std::milli>(duration).count(); }

}  // namespace

void Gateway::LogStart(uint16_t port) const {
  const Inference& model = *inference_;
  spdlog::info("gateway: {} ({}, {}) on http://{}:{} with {} tokenization threads, {} worker(s)", model.model_id(),
               model.config().architecture, model.reranker() ? "reranker" : std::to_string(model.dimensions()) + " dimensions",
               options_.host, port, model.tokenization_threads(), model.worker_count());
}

StatusOr<std::unique_ptr<Gateway>> Gateway::Create(const GatewayOptions& options, metrics::Registry& registry) {
  auto gateway = std::unique_ptr<Gateway>(new Gateway(registry));
  Gateway& g = *gateway;
  g.options_ = options;
  auto inference = Inference::Load(options, registry);
  if (!inference.ok()) return inference.status();
  g.inference_ = std::move(inference.value());
  g.created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  g.openapi_document_ = OpenApiDocument(g.model_id(), kVersion);
  g.request_seconds_ = &registry.AddHistogram("stamen_gateway_request_seconds", "HTTP request time, arrival to answer",
                                              metrics::ExponentialBuckets(0.0005, 2, 16));
  g.routes_ = g.Routes();
  g.served_ = {gateway.get()};
  return gateway;
}

void Gateway::ServeAlongside(std::vector<const Gateway*> models) {
  std::vector<const Inference*> inferences;
  for (const Gateway* model : models) inferences.push_back(model->inference_.get());
  inference_->ServeAlongside(std::move(inferences));
  served_ = std::move(models);
}

Gateway::~Gateway() { Shutdown(); }

void Gateway::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (inference_) inference_->Stop();  // runs what is queued on the pool, stops the health checks
}

void Gateway::CountResponse(const std::string& route, int status) {
  std::lock_guard lock(counters_mutex_);
  metrics::Counter*& counter = responses_[{route, status}];
  if (counter == nullptr) {
    counter = &registry_.AddCounter("stamen_gateway_responses_total", "HTTP answers by route and status",
                                    "route=\"" + route + "\",status=\"" + std::to_string(status) + "\"");
  }
  counter->Increment();
}

std::unique_ptr<RouteTable> Gateway::Routes() {
  using enum ApiFamily;
  auto routes = std::make_unique<RouteTable>();
  // The model's routes, each family's rows in its own file (route_handlers.h), run on its
  // Inference, which lives as long as the routes.
  Inference& model = *inference_;
  AddEmbedRoutes(*routes, model);
  AddRerankRoutes(*routes, model);
  AddCohereRoutes(*routes, model);
  AddTokenizerRoutes(*routes, model);
  AddTeiRoutes(*routes, model);
  AddMultiVectorRoutes(*routes, model);
  AddBgeM3Routes(*routes, model);

  auto models = [this](const http::Request& request, Reply reply) { Models(request, std::move(reply)); };
  auto model_route = [this](const http::Request& request, Reply reply) { Model(request, std::move(reply)); };
  auto health = [this](const http::Request&, Reply reply) { Health(std::move(reply)); };
  // Liveness: the process runs and its HTTP server answers, whatever the workers' state, so
  // that an orchestrator restarts only a stuck process, never one waiting for its workers.
  auto live = [](const http::Request&, Reply reply) { reply(JsonResponse(200, R"({"status":"ok"})")); };
  auto info = [this](const http::Request&, Reply reply) { reply(JsonResponse(200, InfoBody())); };
  auto metrics = [this](const http::Request&, Reply reply) {
    http::Response response = JsonResponse(200, registry_.Render());
    response.content_type = "text/plain; version=0.0.4";
    reply(std::move(response));
  };
  auto openapi = [this](const http::Request&, Reply reply) { reply(JsonResponse(200, openapi_document_)); };
  auto docs = [](const http::Request&, Reply reply) {
    http::Response response = JsonResponse(200, std::string(DocsPage()));
    response.content_type = "text/html; charset=utf-8";
    reply(std::move(response));
  };
  // The gateway's own, after the model's (GET / after TEI's POST /, as a 405's Allow lists them).
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  routes->Add({
      {"/v1/models", "GET", kOpenAI, false, false, models},
      {"/v1/models/{id}", "GET", kOpenAI, false, false, model_route},
      {"/", "GET", kTei, false, true, health},
      {"/ping", "GET", kTei, false, true, health},  // SageMaker's health check
      {"/health", "GET", kTei, false, true, health},
      {"/ready", "GET", kTei, false, true, health},  // the readiness probe's name for /health
      {"/live", "GET", kTei, false, true, live},
      {"/info", "GET", kTei, false, false, info},
      {"/metrics", "GET", kTei, false, false, metrics},
      // The API's description (openapi.json; TEI serves it at /api-doc/openapi.json) and its
      // page: open, so that clients and people can find the API before they have a key.
      {"/openapi.json", "GET", kTei, false, true, openapi},
      {"/api-doc/openapi.json", "GET", kTei, false, true, openapi},
      {"/docs", "GET", kTei, false, true, docs},
  });
  return routes;
}

void Gateway::AddOriginHeaders(const std::string& allowed, http::Response& response) {
  if (allowed.empty()) return;
  response.headers.emplace_back("access-control-allow-origin", allowed);
  if (allowed != "*") response.headers.emplace_back("vary", "origin");
}

std::string Gateway::AllowedOrigin(std::string_view origin) const {
  if (origin.empty()) return "";
  for (const std::string& allowed : options_.cors_allow_origins) {
    if (allowed == "*") return "*";
    if (allowed == origin) return allowed;
  }
  return "";
}

void Gateway::Handle(http::Request request, http::Respond respond, std::optional<ApiError> refusal) {
  // CORS: answers to an allowed Origin say so; a browser's preflight (OPTIONS) is answered
  // here, before the API key (browsers send preflights without credentials).
  if (const std::string origin = AllowedOrigin(request.Header("origin")); !origin.empty()) {
    respond = [respond = std::move(respond), origin](http::Response response) {
      AddOriginHeaders(origin, response);
      respond(std::move(response));
    };
  }
  if (request.method == "OPTIONS") {
    const std::string methods = routes_->Methods(request.path);
    http::Response response;
    response.status = methods.empty() ? 404 : 204;
    response.headers.emplace_back("allow", methods.empty() ? "OPTIONS" : methods + ", OPTIONS");
    if (!AllowedOrigin(request.Header("origin")).empty() && !methods.empty()) {
      response.headers.emplace_back("access-control-allow-methods", methods);
      response.headers.emplace_back("access-control-allow-headers", "authorization, content-type");
      response.headers.emplace_back("access-control-max-age", "3600");
    }
    return respond(std::move(response));
  }
  const Clock::time_point start = Clock::now();
  const Route* route = routes_->Find(request.path, request.method);
  const Route* path_route = route ? route : routes_->FindPath(request.path);
  // An unknown path answers in OpenAI's shape, the one most clients parse.
  const ApiFamily family = path_route ? path_route->family : ApiFamily::kOpenAI;
  const std::string label = path_route ? path_route->path : "other";
  const bool is_work = route && route->work;
  if (is_work && in_flight_.fetch_add(1) >= options_.max_concurrent_requests) {
    --in_flight_;
    CountResponse(label, 429);
    http::Response refused = ErrorResponse({429, "overloaded: more than --max-concurrent-requests " +
                                                     std::to_string(options_.max_concurrent_requests) +
                                                     " requests in flight",
                                            "overloaded"},
                                           family);
    refused.headers.emplace_back("retry-after", std::to_string(inference_->RetryAfterSeconds()));
    respond(std::move(refused));
    return;
  }
  Reply reply([this, respond, start, label, is_work](http::Response response) {
    const double total_ms = Milliseconds(Clock::now() - start);
    response.headers.emplace_back("x-total-time", std::to_string(std::llround(total_ms)));
    request_seconds_->Observe(total_ms / 1000);
    // Refused for load (admission or --max-concurrent-requests): when to try again.
    if (response.status == 429) {
      response.headers.emplace_back("retry-after", std::to_string(inference_->RetryAfterSeconds()));
    }
    CountResponse(label, response.status);
    if (is_work) --in_flight_;
    respond(std::move(response));
  }, family);

  if (!options_.api_key.empty() && !(route && route->open)) {
    if (!CarriesApiKey(request.Header("authorization"), options_.api_key)) {
      http::Response response = ErrorResponse(
          {401, "missing or wrong API key (send Authorization: Bearer <key>)", "authentication_error"}, family);
      response.headers.emplace_back("www-authenticate", "Bearer");
      return reply(std::move(response));
    }
  }
  if (refusal) return reply.Error(*refusal);
  if (!path_route) return reply.Error({404, "no route " + request.method + " " + request.path, "not_found"});
  if (!route) {
    const std::string methods = routes_->Methods(request.path);
    http::Response response = ErrorResponse({405, request.path + " takes " + methods, "invalid_request_error"}, family);
    response.headers.emplace_back("allow", methods);
    return reply(std::move(response));
  }
  route->handler(request, std::move(reply));
}

void Gateway::Health(Reply reply) {
  if (inference_->Healthy()) return reply(JsonResponse(200, R"({"status":"ok"})"));
  reply.Error({503, "no healthy worker", "unavailable"});
}

void Gateway::Models(const http::Request&, Reply reply) {
  std::string body = "{\"object\":\"list\",\"data\":[";
  for (const Gateway* model : served_) {
    if (model != served_.front()) body += ',';
    AppendModelObject(body, model->model_id(), model->created_);
  }
  body += "]}";
  reply(JsonResponse(200, std::move(body)));
}

std::string ServedModelNames(const std::vector<const Gateway*>& models) {
  std::string names;
  for (const Gateway* model : models) names += (names.empty() ? "'" : ", '") + model->model_id() + "'";
  return names;
}

void Gateway::Model(const http::Request& request, Reply reply) {
  const std::string id = PathParameter("/v1/models/{id}", request.path);
  for (const Gateway* model : served_) {
    if (model->model_id() != id) continue;
    std::string body;
    AppendModelObject(body, model->model_id(), model->created_);
    return reply(JsonResponse(200, std::move(body)));
  }
  reply.Error(UnknownModel(id, ServedModelNames(served_)));
}

std::string Gateway::InfoBody() const { return gateway::InfoBody(*inference_); }

}  // namespace stamen::gateway
