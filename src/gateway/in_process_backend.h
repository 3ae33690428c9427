// The worker of `stamen serve`, called directly: a WorkerBackend over a LocalWorker in the
// same process. A library of its own (stamen_gateway_in_process), since it links the engine
// and the gateway does not.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "gateway/worker_backend.h"
#include "server/local_worker.h"

namespace stamen::gateway {

class InProcessBackend final : public WorkerBackend {
 public:
  explicit InProcessBackend(server::LocalWorker& worker) : worker_(worker) {}
  void Submit(std::shared_ptr<server::WorkRequest> work) override;
  void Cancel(server::WorkRequest& work) override { worker_.scheduler().Cancel(work); }
  Status CheckHealth(std::chrono::milliseconds timeout) override;
  StatusOr<v1::InfoResponse> FetchInfo(std::chrono::milliseconds) override { return worker_.info(); }
  const std::string& address() const override { return address_; }

 private:
  server::LocalWorker& worker_;
  const std::string address_ = "in-process";
};

}  // namespace stamen::gateway
