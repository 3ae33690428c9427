// The HTTP server in front of the models served: one, or several on one server. Each model is a
// Gateway of its own (tokenizers, dispatcher, workers, queue and limits), so that load on one
// never waits behind another's; the router only picks which gateway answers a request:
//   - a path under /models/{name}/ goes to that model, with the prefix taken off (the way TEI
//     routes, which have no model field, reach a model that is not the default);
//   - otherwise a JSON body's "model" field (OpenAI, Cohere) names it;
//   - otherwise the default model (the first) answers.
// With several models, a name that is not served gets OpenAI's 404 model_not_found, naming the
// models served, and /health (and /ping, GET /) answers for the whole server: 200 while any
// model can serve ("degraded" naming those that cannot); /models/{name}/health for one model.
// A model served alone answers whatever model name a body gives (OpenAI clients send their
// own), its /health is its gateway's, and its metrics carry no model label.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics.h"
#include "gateway/gateway.h"

namespace stamen::gateway {

// The Prometheus labels of one model's metrics: model="NAME", the name escaped as the text
// format requires. The router labels each gateway's with them, `stamen serve` each worker's.
std::string ModelMetricLabels(std::string_view name);

class ModelRouter {
 public:
  // Creates a gateway per entry of `models` (each with a unique model_id; with several, their
  // metrics labelled model="<id>") and serves them all on the first entry's host and port.
  static StatusOr<std::unique_ptr<ModelRouter>> Start(const std::vector<GatewayOptions>& models,
                                                      metrics::Registry& registry);
  ~ModelRouter();

  uint16_t port() const { return http_->port(); }
  // The model that answers requests naming none (the first).
  const Gateway& default_model() const { return *models_.front(); }
  // Stops accepting connections, lets requests in flight finish (up to `drain`), stops
  // every model's gateway.
  void Shutdown(std::chrono::milliseconds drain);

 private:
  ModelRouter() = default;
  void Handle(http::Request request, http::Respond respond);
  // The served model whose name `path` starts with, after /models/ (the longest: names may
  // hold '/', as hub ids do), or null; `*rest` is the path after the name ("/" when none).
  Gateway* FindByPath(std::string_view path, std::string* rest) const;
  Gateway* FindByName(std::string_view name) const;
  // Health of `models`: 200 ok, 200 degraded (naming the models without a healthy worker) or
  // 503 when none can serve.
  static http::Response Health(const std::vector<const Gateway*>& models);

  std::vector<std::unique_ptr<metrics::Registry>> model_registries_;  // labelled views
  std::vector<std::unique_ptr<Gateway>> models_;
  std::vector<const Gateway*> served_;  // models_, for the gateways' /v1/models
  std::unique_ptr<http::Server> http_;
  bool shut_down_ = false;
};

}  // namespace stamen::gateway
