#include "server/inference_service.h"

#include <cstring>

namespace stamen::server {

grpc::StatusCode GrpcCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return grpc::StatusCode::OK;
    case StatusCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StatusCode::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kCancelled: return grpc::StatusCode::CANCELLED;
    case StatusCode::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kError: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

namespace {

// A call that waits for the scheduler. Owns the work; cancellation by the client (or its
// deadline) reaches the scheduler, which then drops the queued sequences.
class WorkReactor final : public grpc::ServerUnaryReactor {
 public:
  WorkReactor(Scheduler& scheduler, std::shared_ptr<WorkRequest> work)
      : scheduler_(scheduler), work_(std::move(work)) {}
  void OnCancel() override { scheduler_.Cancel(*work_); }
  void OnDone() override { delete this; }

 private:
  Scheduler& scheduler_;
  std::shared_ptr<WorkRequest> work_;
};

grpc::Status ToGrpc(const Status& status) {
  return status.ok() ? grpc::Status::OK : grpc::Status(GrpcCode(status.code()), status.message());
}

Clock::time_point SteadyDeadline(const grpc::CallbackServerContext& context) {
  const auto remaining = context.deadline() - std::chrono::system_clock::now();
  // No deadline reads as a date centuries away.
  if (remaining > std::chrono::hours(24 * 365)) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(remaining);
}

void FillTiming(const WorkTiming& timing, v1::Timing* out) {
  out->set_queue_microseconds(timing.queue_microseconds);
  out->set_compute_microseconds(timing.compute_microseconds);
  out->set_batches(timing.batches);
}

// Submits `work` and returns the reactor that `fill` completes (on success) once it is done.
template <typename Fill>
grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* context, Scheduler& scheduler,
                              std::shared_ptr<WorkRequest> work, const Status& decoded, Fill fill) {
  if (!decoded.ok()) {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(ToGrpc(decoded));
    return reactor;
  }
  work->deadline = SteadyDeadline(*context);
  auto* reactor = new WorkReactor(scheduler, work);
  work->on_done = [reactor, fill](WorkRequest& done) {
    if (done.status.ok()) fill(done);
    reactor->Finish(ToGrpc(done.status));
  };
  const Status submitted = scheduler.Submit(std::move(work));
  if (!submitted.ok()) reactor->Finish(ToGrpc(submitted));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* InferenceService::Embed(grpc::CallbackServerContext* context,
                                                  const v1::EmbedRequest* request, v1::EmbedResponse* response) {
  auto work = std::make_shared<WorkRequest>();
  const Status decoded = DecodeEmbedRequest(*request, *work);
  return Run(context, worker_.scheduler(), std::move(work), decoded, [response](WorkRequest& done) {
    response->set_count(static_cast<uint32_t>(done.row_offsets.empty() ? 0 : done.row_offsets.back()));
    response->set_dimensions(static_cast<uint32_t>(done.columns));
    response->set_embeddings(std::move(done.output));
    FillTiming(done.timing, response->mutable_timing());
  });
}

grpc::ServerUnaryReactor* InferenceService::Score(grpc::CallbackServerContext* context,
                                                  const v1::ScoreRequest* request, v1::ScoreResponse* response) {
  auto work = std::make_shared<WorkRequest>();
  const Status decoded = DecodeScoreRequest(*request, *work);
  return Run(context, worker_.scheduler(), std::move(work), decoded, [response](WorkRequest& done) {
    response->set_count(static_cast<uint32_t>(done.lengths.size()));
    response->set_num_labels(static_cast<uint32_t>(done.columns));
    response->set_scores(std::move(done.output));
    FillTiming(done.timing, response->mutable_timing());
  });
}

grpc::ServerUnaryReactor* InferenceService::Info(grpc::CallbackServerContext* context, const v1::InfoRequest*,
                                                 v1::InfoResponse* response) {
  *response = worker_.info();
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::Health(grpc::CallbackServerContext* context, const v1::HealthRequest*,
                                                   v1::HealthResponse* response) {
  Scheduler& scheduler = worker_.scheduler();
  if (scheduler.draining()) {
    response->set_state(v1::HealthResponse::DRAINING);
  } else if (!worker_.health().ok()) {
    response->set_state(v1::HealthResponse::NOT_SERVING);
  } else {
    response->set_state(v1::HealthResponse::SERVING);
  }
  const Scheduler::QueueDepth depth = scheduler.queue_depth();
  response->set_queued_sequences(static_cast<uint64_t>(depth.sequences));
  response->set_queued_tokens(static_cast<uint64_t>(depth.tokens));
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace stamen::server
