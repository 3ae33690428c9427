#include "gateway/worker_backend.h"

#include <algorithm>
#include <thread>

#include "server/request_validation.h"

namespace stamen::gateway {

using server::RowOffsets;
using server::WorkKind;
using server::WorkRequest;

Status FromGrpc(const grpc::Status& status, const std::string& address) {
  if (status.ok()) return Status();
  StatusCode code = StatusCode::kError;
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: code = StatusCode::kInvalidArgument; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: code = StatusCode::kResourceExhausted; break;
    case grpc::StatusCode::UNAVAILABLE: code = StatusCode::kUnavailable; break;
    case grpc::StatusCode::CANCELLED: code = StatusCode::kCancelled; break;
    case grpc::StatusCode::DEADLINE_EXCEEDED: code = StatusCode::kDeadlineExceeded; break;
    default: break;
  }
  return Status::Error(code, "worker " + address + ": " + status.error_message());
}

// One call in flight: owns the gRPC objects until the answer arrives.
struct GrpcBackend::Call {
  grpc::ClientContext context;
  std::shared_ptr<WorkRequest> work;
  v1::EmbedRequest embed_request;
  v1::EmbedResponse embed_response;
  v1::ScoreRequest score_request;
  v1::ScoreResponse score_response;
};

GrpcBackend::GrpcBackend(std::string address, std::chrono::milliseconds call_timeout)
    : address_(std::move(address)), call_timeout_(call_timeout) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(256 * 1024 * 1024);
  arguments.SetMaxSendMessageSize(256 * 1024 * 1024);
  // Reconnect quickly after a worker restarts (the default backoff grows to two minutes).
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  channel_ = grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), arguments);
  stub_ = v1::Inference::NewStub(channel_);
}

GrpcBackend::~GrpcBackend() {
  // Calls still in flight end with CANCELLED; their callbacks run before the channel goes.
  {
    std::lock_guard lock(calls_mutex_);
    for (Call* call : calls_) call->context.TryCancel();
  }
  while (true) {
    {
      std::lock_guard lock(calls_mutex_);
      if (calls_.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

namespace {

void TakeTiming(const v1::Timing& timing, server::WorkTiming& out) {
  out.queue_microseconds = timing.queue_microseconds();
  out.compute_microseconds = timing.compute_microseconds();
  out.batches = timing.batches();
}

}  // namespace

void GrpcBackend::Submit(std::shared_ptr<WorkRequest> work) {
  auto* call = new Call();
  call->work = std::move(work);
  WorkRequest& request = *call->work;
  const auto now = server::Clock::now();
  const auto deadline = std::min(request.deadline, now + call_timeout_);
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::duration_cast<std::chrono::system_clock::duration>(deadline - now));
  {
    std::lock_guard lock(calls_mutex_);
    calls_.push_back(call);
  }
  auto finish = [this, call](grpc::Status status) {
    WorkRequest& done = *call->work;
    done.status = FromGrpc(status, address_);
    if (status.ok()) {
      if (done.kind != WorkKind::kScore) {
        done.columns = call->embed_response.dimensions();
        done.output = std::move(*call->embed_response.mutable_embeddings());
        TakeTiming(call->embed_response.timing(), done.timing);
      } else {
        done.columns = call->score_response.num_labels();
        done.output = std::move(*call->score_response.mutable_scores());
        TakeTiming(call->score_response.timing(), done.timing);
      }
      const size_t expected = static_cast<size_t>(RowOffsets(done).back() * done.columns) * sizeof(float);
      if (done.output.size() != expected) {
        done.status = Status::Error("worker " + address_ + " answered with " + std::to_string(done.output.size()) +
                                    " bytes, expected " + std::to_string(expected));
      }
    }
    std::shared_ptr<WorkRequest> keep = std::move(call->work);
    {
      std::lock_guard lock(calls_mutex_);
      calls_.erase(std::find(calls_.begin(), calls_.end(), call));
    }
    delete call;
    if (keep->on_done) keep->on_done(*keep);
  };
  if (request.kind != WorkKind::kScore) {
    server::EncodeEmbedRequest(request, call->embed_request);
    stub_->async()->Embed(&call->context, &call->embed_request, &call->embed_response, finish);
  } else {
    server::EncodeScoreRequest(request, call->score_request);
    stub_->async()->Score(&call->context, &call->score_request, &call->score_response, finish);
  }
}

void GrpcBackend::Cancel(WorkRequest& work) {
  std::lock_guard lock(calls_mutex_);
  for (Call* call : calls_) {
    if (call->work.get() == &work) call->context.TryCancel();
  }
}

Status GrpcBackend::CheckHealth(std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  // Wait for the connection within the deadline: a fail-fast call on a channel whose last
  // connection attempt failed fails at once and shuts the new attempt down with it ("tcp
  // handshaker shutdown"), so a worker that came up was seen 4 s later (5-30 s under ASan)
  // instead of at the next check.
  context.set_wait_for_ready(true);
  v1::HealthResponse response;
  const grpc::Status status = stub_->Health(&context, {}, &response);
  if (!status.ok()) return FromGrpc(status, address_);
  if (response.state() == v1::HealthResponse::NOT_SERVING) {
    return Status::Error(StatusCode::kUnavailable, "worker " + address_ + " is not ready (its engine failed)");
  }
  if (response.state() != v1::HealthResponse::SERVING) {
    return Status::Error(StatusCode::kUnavailable, "worker " + address_ + " is draining");
  }
  return Status();
}

StatusOr<v1::InfoResponse> GrpcBackend::FetchInfo(std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  context.set_wait_for_ready(true);  // as CheckHealth
  v1::InfoResponse response;
  const grpc::Status status = stub_->Info(&context, {}, &response);
  if (!status.ok()) return FromGrpc(status, address_);
  return response;
}

}  // namespace stamen::gateway
