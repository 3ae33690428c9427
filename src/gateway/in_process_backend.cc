#include "gateway/in_process_backend.h"

namespace stamen::gateway {

void InProcessBackend::Submit(std::shared_ptr<server::WorkRequest> work) {
  const Status submitted = worker_.scheduler().Submit(work);
  if (!submitted.ok()) {
    work->status = submitted;
    if (work->on_done) work->on_done(*work);
  }
}

Status InProcessBackend::CheckHealth(std::chrono::milliseconds) {
  if (worker_.scheduler().draining()) return Status::Error(StatusCode::kUnavailable, "the worker is draining");
  if (Status health = worker_.health(); !health.ok()) {
    return Status::Error(StatusCode::kUnavailable, "the worker is not ready: " + health.message());
  }
  return Status();
}

}  // namespace stamen::gateway
