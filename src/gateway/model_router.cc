#include "gateway/model_router.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <set>

#include "model_folder/model_options.h"

namespace stamen::gateway {

namespace {

constexpr std::string_view kModelsPrefix = "/models/";

// The top-level "model" string of a JSON object body, or empty (no such field, or a body that
// is not JSON: the model's own parser then answers the 400).
std::string ModelField(const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::dom::object fields;
  std::string_view model;
  if (parser.parse(body).get(fields) != simdjson::SUCCESS || fields["model"].get(model) != simdjson::SUCCESS) return "";
  return std::string(model);
}

// A health probe of the whole server (GET or HEAD: any other method on these paths is the
// routes' to answer, a 405 for most).
bool IsHealthProbe(const http::Request& request) {
  return (request.method == "GET" || request.method == "HEAD") &&
         (request.path == "/health" || request.path == "/ready" || request.path == "/ping" || request.path == "/");
}

// The HTTP server of `options` (host, port, threads, payload limit) with `handler`; the errors
// it finds itself answer in the shape of `routes`' API and with `allowed_origin`'s CORS header.
StatusOr<std::unique_ptr<http::Server>> StartHttp(const GatewayOptions& options, const RouteTable& routes,
                                                  http::Handler handler,
                                                  std::function<std::string(std::string_view)> allowed_origin) {
  http::ServerOptions http_options;
  http_options.host = options.host;
  http_options.port = options.port;
  http_options.threads = options.http_threads;
  http_options.body_limit = options.payload_limit;
  // A body over the payload limit is refused before it reaches Handle: in its route's shape too.
  http_options.error_response = [&routes, allowed_origin](std::string_view path, std::string_view origin, int status,
                                                           std::string_view message, std::string_view type) {
    const Route* route = routes.FindPath(path);
    http::Response response =
        ErrorResponse({status, std::string(message), std::string(type)}, route ? route->family : ApiFamily::kOpenAI);
    Gateway::AddOriginHeaders(allowed_origin(origin), response);
    return response;
  };
  return http::Server::Start(http_options, std::move(handler));
}

}  // namespace

std::string ModelMetricLabels(std::string_view name) {
  std::string labels = "model=\"";
  for (const char c : name) {
    if (c == '\n') {
      labels += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') labels += '\\';
    labels += c;
  }
  return labels + "\"";
}

StatusOr<std::unique_ptr<ModelRouter>> ModelRouter::Start(const std::vector<GatewayOptions>& models,
                                                          metrics::Registry& registry) {
  if (models.empty()) return Status::Error("no model to serve");
  auto router = std::unique_ptr<ModelRouter>(new ModelRouter());
  const bool several = models.size() > 1;
  std::set<std::string> names;
  for (const GatewayOptions& options : models) {
    // The name the gateway will take, checked before it loads anything.
    const std::string name = engine::ModelIdOf(options.model_dir, options.model_id);
    if (!names.insert(name).second) return Status::Error("two models are named '" + name + "': give each its own name");
    metrics::Registry* model_registry = &registry;
    if (several) {
      model_registry = router->model_registries_.emplace_back(
          std::make_unique<metrics::Registry>(registry, ModelMetricLabels(name))).get();
    }
    auto gateway = Gateway::Create(options, *model_registry);
    if (!gateway.ok()) return several ? Status::Error("model " + name + ": " + gateway.status().message()) : gateway.status();
    router->served_.push_back(gateway->get());
    router->models_.push_back(std::move(gateway.value()));
  }
  for (const auto& gateway : router->models_) gateway->ServeAlongside(router->served_);
  ModelRouter* self = router.get();
  Gateway& first = *router->models_.front();
  auto server = StartHttp(
      models.front(), first.routes(),
      [self](http::Request request, http::Respond respond) { self->Handle(std::move(request), std::move(respond)); },
      [&first](std::string_view origin) { return first.AllowedOrigin(origin); });
  if (!server.ok()) return server.status();
  router->http_ = std::move(server.value());
  for (const auto& gateway : router->models_) gateway->LogStart(router->http_->port());
  if (several) {
    spdlog::info("gateway: {} models on one server ({}); the default is '{}'", router->models_.size(),
                 ServedModelNames(router->served_), first.model_id());
  }
  return router;
}

ModelRouter::~ModelRouter() { Shutdown(std::chrono::milliseconds(5000)); }

void ModelRouter::Shutdown(std::chrono::milliseconds drain) {
  if (shut_down_) return;
  shut_down_ = true;
  int64_t in_flight = 0;
  for (const auto& gateway : models_) in_flight += gateway->in_flight();
  spdlog::info("gateway: shutting down: no new connections, finishing {} requests in flight", in_flight);
  if (http_) http_->Stop(drain);
  for (const auto& gateway : models_) gateway->Shutdown();
  spdlog::info("gateway: stopped");
}

Gateway* ModelRouter::FindByName(std::string_view name) const {
  for (const auto& gateway : models_) {
    if (gateway->model_id() == name) return gateway.get();
  }
  return nullptr;
}

Gateway* ModelRouter::FindByPath(std::string_view path, std::string* rest) const {
  Gateway* found = nullptr;
  const std::string_view named = path.substr(kModelsPrefix.size());
  for (const auto& gateway : models_) {
    const std::string& name = gateway->model_id();
    const bool matches = named.substr(0, name.size()) == name && (named.size() == name.size() || named[name.size()] == '/');
    if (matches && (found == nullptr || name.size() > found->model_id().size())) found = gateway.get();
  }
  if (found != nullptr) {
    *rest = std::string(named.substr(found->model_id().size()));
    if (rest->empty()) *rest = "/";
  }
  return found;
}

http::Response ModelRouter::Health(const std::vector<const Gateway*>& models) {
  std::vector<const Gateway*> unavailable;
  for (const Gateway* model : models) {
    if (!model->Healthy()) unavailable.push_back(model);
  }
  if (unavailable.empty()) return JsonResponse(200, R"({"status":"ok"})");
  if (unavailable.size() == models.size()) {
    return ErrorResponse({503, "no healthy worker for " + ServedModelNames(unavailable), "unavailable"}, ApiFamily::kTei);
  }
  std::string body = R"({"status":"degraded","unavailable":[)";
  for (const Gateway* model : unavailable) {
    if (model != unavailable.front()) body += ',';
    AppendJsonString(body, model->model_id());
  }
  return JsonResponse(200, body + "]}");
}

void ModelRouter::Handle(http::Request request, http::Respond respond) {
  Gateway* target = models_.front().get();
  const bool several = models_.size() > 1;
  bool named_by_path = false;
  std::optional<ApiError> refusal;
  if (request.path.starts_with(kModelsPrefix)) {
    std::string rest;
    if (Gateway* found = FindByPath(request.path, &rest)) {
      target = found;
      request.path = std::move(rest);
      named_by_path = true;
    } else {
      // The rest of the path after the unknown name's first segment: the route whose API
      // shapes the 404.
      const std::string named = request.path.substr(kModelsPrefix.size());
      const size_t slash = named.find('/');
      refusal = UnknownModel(named.substr(0, slash), ServedModelNames(served_));
      request.path = slash == std::string::npos ? "/" : named.substr(slash);
    }
  } else if (several && request.method == "POST") {
    // One model alone answers any name: OpenAI clients send their own ("text-embedding-3-small").
    if (const std::string name = ModelField(request.body); !name.empty()) {
      if (Gateway* found = FindByName(name)) {
        target = found;
      } else {
        refusal = UnknownModel(name, ServedModelNames(served_));
      }
    }
  }
  // The whole server's health probes carry no API key and need no model's routes: answered
  // here. One model's are its gateway's own.
  if (several && !refusal && IsHealthProbe(request)) {
    return respond(Health(named_by_path ? std::vector<const Gateway*>{target} : served_));
  }
  target->Handle(std::move(request), std::move(respond), std::move(refusal));
}

}  // namespace stamen::gateway
