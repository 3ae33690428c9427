// `stamen worker`: a LocalWorker served over gRPC (and its metrics over HTTP), with the
// graceful shutdown a SIGTERM asks for.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "common/metrics.h"
#include "http/http_server.h"
#include "server/inference_service.h"
#include "server/local_worker.h"

namespace stamen::server {

struct GrpcWorkerOptions {
  LocalWorkerOptions worker;
  std::string listen = "127.0.0.1:50051";  // host:port; port 0 picks a free one
  std::string metrics_host = "127.0.0.1";
  int metrics_port = -1;  // -1: no metrics endpoint; 0: any free port
};

class GrpcWorker {
 public:
  static StatusOr<std::unique_ptr<GrpcWorker>> Start(const GrpcWorkerOptions& options);
  ~GrpcWorker();

  int port() const { return port_; }
  int metrics_port() const { return metrics_ ? metrics_->port() : -1; }
  LocalWorker& worker() { return *worker_; }
  metrics::Registry& registry() { return registry_; }

  // Graceful shutdown: refuse new requests (UNAVAILABLE, Health says DRAINING), finish every
  // accepted one, then close the server. Idempotent.
  void Shutdown();

 private:
  GrpcWorker() = default;
  metrics::Registry registry_;
  std::unique_ptr<LocalWorker> worker_;
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<http::Server> metrics_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace stamen::server
