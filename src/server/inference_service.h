// The gRPC face of a worker: stamen.v1.Inference on the callback API (gRPC's threads run the
// handlers; no thread waits per call). Handlers decode the packed ids into a WorkRequest, hand
// it to the scheduler and return; the scheduler's thread finishes the call.
#pragma once

#include <atomic>

#include "proto/stamen/v1/inference.grpc.pb.h"
#include "server/local_worker.h"
#include "server/request_validation.h"

namespace stamen::server {

class InferenceService final : public v1::Inference::CallbackService {
 public:
  explicit InferenceService(LocalWorker& worker) : worker_(worker) {}

  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* context, const v1::EmbedRequest* request,
                                  v1::EmbedResponse* response) override;
  grpc::ServerUnaryReactor* Score(grpc::CallbackServerContext* context, const v1::ScoreRequest* request,
                                  v1::ScoreResponse* response) override;
  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* context, const v1::InfoRequest* request,
                                 v1::InfoResponse* response) override;
  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* context, const v1::HealthRequest* request,
                                   v1::HealthResponse* response) override;

 private:
  LocalWorker& worker_;
};

// The gRPC code of a stamen error kind.
grpc::StatusCode GrpcCode(StatusCode code);

}  // namespace stamen::server
