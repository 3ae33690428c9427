// The HTTP gateway of one model: the routes of ../shared/docs/api.md with the API key, CORS,
// the concurrency limit and the response metrics; /health, /info, /metrics and the API's
// description. The routes that compute run on the model's Inference (inference.h: tokenizers,
// pool, dispatcher) through their handlers (route_handlers.h). The HTTP server in front of it
// is the ModelRouter's (model_router.h), also when it serves this one model alone.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "gateway/api.h"
#include "gateway/gateway_options.h"
#include "gateway/inference.h"
#include "gateway/routes.h"
#include "http/http_server.h"

namespace stamen::gateway {

class Gateway {
 public:
  // `registry` (which must outlive the gateway) gets the gateway's metrics and is what
  // /metrics renders (an in-process worker registers its own there too). The ModelRouter
  // (model_router.h) hands it its requests.
  static StatusOr<std::unique_ptr<Gateway>> Create(const GatewayOptions& options, metrics::Registry& registry);
  // What Create checks of the model folder against `options` (its configs, the pooling against
  // the model's head, the prompt names), for callers that load a worker before the gateway.
  static Status CheckModel(const GatewayOptions& options) { return Inference::CheckModel(options); }
  ~Gateway();

  const std::string& model_id() const { return inference_->model_id(); }
  // Whether a worker of this model answers its health checks.
  bool Healthy() const { return inference_->Healthy(); }
  // The models served beside this one, itself included, in the order /v1/models lists them.
  void ServeAlongside(std::vector<const Gateway*> models);
  // Answers one request. `refusal` (an unknown model, found by the router) is answered
  // instead, after the API key check, so that a client without the key learns nothing.
  void Handle(http::Request request, http::Respond respond, std::optional<ApiError> refusal = std::nullopt);
  // What /info answers; what the router's /models/{name}/info does too.
  std::string InfoBody() const;
  // The start line: model, kind, address, threads and workers.
  void LogStart(uint16_t port) const;
  // What access-control-allow-origin answers a request from `origin`: "*", the origin itself,
  // or empty when --cors-allow-origin does not allow it.
  std::string AllowedOrigin(std::string_view origin) const;
  // The CORS headers of an answer to an allowed origin (AllowedOrigin's; none when empty).
  static void AddOriginHeaders(const std::string& allowed, http::Response& response);

  // The routes served (tests compare them with openapi.json).
  const RouteTable& routes() const { return *routes_; }
  // Requests being answered (the router's shutdown log).
  int64_t in_flight() const { return in_flight_.load(); }
  // Runs what is queued on the tokenization pool and stops the workers' health checks; the
  // router has stopped the HTTP server first, letting requests in flight finish.
  void Shutdown();

 private:
  explicit Gateway(metrics::Registry& registry) : registry_(registry) {}
  // Every route: the model's, by API family (route_handlers.h), then the gateway's own.
  std::unique_ptr<RouteTable> Routes();
  void Health(Reply reply);
  void Models(const http::Request& request, Reply reply);
  void Model(const http::Request& request, Reply reply);
  void CountResponse(const std::string& route, int status);

  GatewayOptions options_;
  metrics::Registry& registry_;
  std::unique_ptr<Inference> inference_;
  std::string openapi_document_;  // GET /openapi.json: openapi.json with the model's id filled in
  int64_t created_ = 0;  // when the gateway started, seconds since the Unix epoch (/v1/models)
  std::vector<const Gateway*> served_;  // every model of this server, this one included
  std::unique_ptr<RouteTable> routes_;

  std::atomic<int64_t> in_flight_{0};
  std::mutex counters_mutex_;
  std::map<std::pair<std::string, int>, metrics::Counter*> responses_;
  metrics::Histogram* request_seconds_ = nullptr;
  bool shut_down_ = false;
};

// The models' names, each quoted, comma-separated (what an unknown model's 404 lists).
std::string ServedModelNames(const std::vector<const Gateway*>& models);

}  // namespace stamen::gateway
