// A gateway on a model folder for the route tests: with an in-process worker, or a gRPC worker
// on loopback (what a request carries then crosses the wire), fp32 on one thread, with small
// batches and chunks so that a request's inputs go out in several chunks.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "gateway/model_router.h"
#include "gateway/in_process_backend.h"
#include "server/grpc_worker.h"
#include "server/local_worker.h"

namespace stamen::gateway::testing {

class ServedModel {
 public:
  explicit ServedModel(const std::string& model_dir, bool grpc = false,
                       std::optional<engine::ops::PoolingMode> pooling = std::nullopt) {
    server::LocalWorkerOptions worker_options;
    worker_options.model_dir = model_dir;
    worker_options.scheduler = {.max_batch_tokens = 32, .max_batch_sequences = 64, .max_queued_tokens = 1 << 20};
    worker_options.engine.num_threads = 1;
    worker_options.engine.compute_dtype = engine::DataType::kF32;
    GatewayOptions options;
    if (grpc) {
      server::GrpcWorkerOptions grpc_options{.worker = worker_options, .listen = "127.0.0.1:0"};
      auto started = server::GrpcWorker::Start(grpc_options);
      EXPECT_TRUE(started.ok()) << started.status().message();
      grpc_worker_ = std::move(started.value());
      options.worker_addresses = {"127.0.0.1:" + std::to_string(grpc_worker_->port())};
    } else {
      auto worker = server::LocalWorker::Load(worker_options, registry_);
      EXPECT_TRUE(worker.ok()) << worker.status().message();
      worker_ = std::move(worker.value());
      options.in_process_worker = std::make_shared<InProcessBackend>(*worker_);
    }
    options.model_dir = model_dir;
    options.port = 0;
    options.tokenization_workers = 2;
    options.dispatcher.chunk_tokens = 40;
    options.pooling = pooling;
    auto gateway = ModelRouter::Start({options}, registry_);
    EXPECT_TRUE(gateway.ok()) << gateway.status().message();
    gateway_ = std::move(gateway.value());
  }
  ~ServedModel() { gateway_->Shutdown(std::chrono::seconds(5)); }
  int port() const { return gateway_->port(); }

 private:
  metrics::Registry registry_;
  std::unique_ptr<server::LocalWorker> worker_;
  std::unique_ptr<server::GrpcWorker> grpc_worker_;
  std::unique_ptr<ModelRouter> gateway_;
};

}  // namespace stamen::gateway::testing
