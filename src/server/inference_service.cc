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

Status DecodeSequences(const v1::TokenSequences& sequences, WorkRequest& request) {
  const std::string& lengths = sequences.lengths();
  if (lengths.size() % sizeof(int32_t) != 0 || sequences.token_ids().size() % sizeof(int32_t) != 0 ||
      sequences.token_type_ids().size() % sizeof(int32_t) != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "token_ids, lengths and token_type_ids must be packed int32 (a multiple of 4 bytes)");
  }
  request.lengths.resize(lengths.size() / sizeof(int32_t));
  std::memcpy(request.lengths.data(), lengths.data(), lengths.size());
  request.token_ids = sequences.token_ids();
  request.token_type_ids = sequences.token_type_ids();
  return Status();
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

std::optional<engine::ops::PoolingMode> PoolingOf(v1::Pooling pooling) {
  switch (pooling) {
    case v1::POOLING_CLS: return engine::ops::PoolingMode::kCls;
    case v1::POOLING_MEAN: return engine::ops::PoolingMode::kMean;
    case v1::POOLING_LAST_TOKEN: return engine::ops::PoolingMode::kLastToken;
    case v1::POOLING_MAX: return engine::ops::PoolingMode::kMax;
    default: return std::nullopt;
  }
}

}  // namespace

grpc::ServerUnaryReactor* InferenceService::Embed(grpc::CallbackServerContext* context,
                                                  const v1::EmbedRequest* request, v1::EmbedResponse* response) {
  auto work = std::make_shared<WorkRequest>();
  work->kind = WorkKind::kEmbed;
  Status decoded = DecodeSequences(request->sequences(), *work);
  if (decoded.ok() && request->pooling() != v1::POOLING_MODEL_DEFAULT && !PoolingOf(request->pooling())) {
    decoded = Status::Error(StatusCode::kInvalidArgument, "unknown pooling " + std::to_string(request->pooling()));
  }
  work->pooling = PoolingOf(request->pooling());
  work->normalize = request->has_normalize() ? request->normalize() : true;
  work->dimensions = request->dimensions();
  return Run(context, worker_.scheduler(), std::move(work), decoded, [response](WorkRequest& done) {
    response->set_count(static_cast<uint32_t>(done.lengths.size()));
    response->set_dimensions(static_cast<uint32_t>(done.columns));
    response->set_embeddings(std::move(done.output));
    FillTiming(done.timing, response->mutable_timing());
  });
}

grpc::ServerUnaryReactor* InferenceService::Score(grpc::CallbackServerContext* context,
                                                  const v1::ScoreRequest* request, v1::ScoreResponse* response) {
  auto work = std::make_shared<WorkRequest>();
  work->kind = WorkKind::kScore;
  const Status decoded = DecodeSequences(request->sequences(), *work);
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
  response->set_state(scheduler.draining() ? v1::HealthResponse::DRAINING : v1::HealthResponse::SERVING);
  const Scheduler::QueueDepth depth = scheduler.queue_depth();
  response->set_queued_sequences(static_cast<uint64_t>(depth.sequences));
  response->set_queued_tokens(static_cast<uint64_t>(depth.tokens));
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace stamen::server
