#include "server/grpc_worker.h"

#include <spdlog/spdlog.h>

namespace stamen::server {

StatusOr<std::unique_ptr<GrpcWorker>> GrpcWorker::Start(const GrpcWorkerOptions& options) {
  auto server = std::unique_ptr<GrpcWorker>(new GrpcWorker());
  auto worker = LocalWorker::Load(options.worker, server->registry_);
  if (!worker.ok()) return worker.status();
  server->worker_ = std::move(worker.value());
  server->service_ = std::make_unique<InferenceService>(*server->worker_);

  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(server->service_.get());
  // Requests carry whole batches of ids; the default 4 MB cap would refuse 100 × 8192 tokens.
  builder.SetMaxReceiveMessageSize(256 * 1024 * 1024);
  builder.SetMaxSendMessageSize(256 * 1024 * 1024);
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || server->port_ == 0) {
    return Status::Error("worker: cannot listen on " + options.listen + " (address in use or invalid?)");
  }

  if (options.metrics_port >= 0) {
    http::ServerOptions http_options;
    http_options.host = options.metrics_host;
    http_options.port = static_cast<uint16_t>(options.metrics_port);
    metrics::Registry* registry = &server->registry_;
    const Scheduler* scheduler = &server->worker_->scheduler();
    auto metrics = http::Server::Start(http_options, [registry, scheduler](http::Request request, http::Respond respond) {
      http::Response response;
      if (request.path == "/metrics") {
        response.content_type = "text/plain; version=0.0.4";
        response.body = registry->Render();
      } else if (request.path == "/live") {
        // Kubernetes' probes: alive while this answers; ready while it takes requests.
        response.body = R"({"status":"ok"})";
      } else if (request.path == "/ready") {
        const bool draining = scheduler->draining();
        response.status = draining ? 503 : 200;
        response.body = draining ? R"({"error":"the worker is shutting down","error_type":"Unhealthy"})"
                                 : R"({"status":"ok"})";
      } else {
        response.status = 404;
        response.body =
            R"({"error":"not found: this port serves /metrics, /live and /ready","error_type":"not_found"})";
      }
      respond(std::move(response));
    });
    if (!metrics.ok()) return metrics.status();
    server->metrics_ = std::move(metrics.value());
    spdlog::info("worker: metrics on http://{}:{}/metrics", options.metrics_host, server->metrics_->port());
  }
  const std::string host = options.listen.substr(0, options.listen.rfind(':'));
  spdlog::info("worker: serving {} over gRPC on {}:{}", server->worker_->info().model_id(), host, server->port_);
  return server;
}

void GrpcWorker::Shutdown() {
  if (shut_down_ || !server_) return;  // a failed Start has nothing to shut down
  shut_down_ = true;
  spdlog::info("worker: shutting down: refusing new requests, finishing accepted ones");
  worker_->scheduler().Drain();
  // Every accepted call has its answer; give them a moment to be sent, then close.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server_->Wait();
  if (metrics_) metrics_->Stop(std::chrono::milliseconds(1000));
  spdlog::info("worker: stopped");
}

GrpcWorker::~GrpcWorker() { Shutdown(); }

}  // namespace stamen::server
