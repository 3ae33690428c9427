// How the gateway reaches a worker: a WorkRequest in, its results (or error) back through the
// request's on_done. Two transports with one interface, so chunking, balancing and retries
// are the same code for `stamen gateway` (gRPC workers in other processes or machines) and
// `stamen serve` (the worker in the same process, no network hop: in_process_backend.h, apart
// so that the gateway links no engine).
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "proto/stamen/v1/inference.grpc.pb.h"
#include "server/work_request.h"

namespace stamen::gateway {

class WorkerBackend {
 public:
  virtual ~WorkerBackend() = default;
  // Runs `work`; its on_done is called exactly once, from any thread (possibly this one,
  // before Submit returns, when the work is refused at once).
  virtual void Submit(std::shared_ptr<server::WorkRequest> work) = 0;
  // Asks the worker to drop `work` (submitted here and not yet done).
  virtual void Cancel(server::WorkRequest& work) = 0;
  // Ok when the worker answers its health check and is serving (not draining). Both calls wait
  // up to `timeout` for the worker to answer, connecting to it first when it is not connected.
  virtual Status CheckHealth(std::chrono::milliseconds timeout) = 0;
  virtual StatusOr<v1::InfoResponse> FetchInfo(std::chrono::milliseconds timeout) = 0;
  // "in-process" or host:port.
  virtual const std::string& address() const = 0;
};

// What is left of a deadline several calls share, at least 50 ms (time for a connection to be
// made to a worker that is up).
inline std::chrono::milliseconds TimeLeft(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(50));
}

// A `stamen worker` over gRPC (asynchronous calls: no thread waits for an answer).
class GrpcBackend final : public WorkerBackend {
 public:
  // `call_timeout` bounds each call (a hung worker is given up on and the work retried).
  GrpcBackend(std::string address, std::chrono::milliseconds call_timeout);
  ~GrpcBackend() override;
  void Submit(std::shared_ptr<server::WorkRequest> work) override;
  void Cancel(server::WorkRequest& work) override;
  Status CheckHealth(std::chrono::milliseconds timeout) override;
  StatusOr<v1::InfoResponse> FetchInfo(std::chrono::milliseconds timeout) override;
  const std::string& address() const override { return address_; }

 private:
  struct Call;
  std::string address_;
  std::chrono::milliseconds call_timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Inference::Stub> stub_;
  std::mutex calls_mutex_;
  std::vector<Call*> calls_;  // in flight, for Cancel
};

// A gRPC status as a stamen status (codes the gateway answers differently are kept).
Status FromGrpc(const grpc::Status& status, const std::string& address);

}  // namespace stamen::gateway
