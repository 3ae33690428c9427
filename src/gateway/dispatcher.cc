#include "gateway/dispatcher.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace stamen::gateway {

using server::WorkRequest;

// A request split into chunks.
struct Dispatcher::JobState {
  std::shared_ptr<WorkRequest> job;
  std::function<void(WorkRequest&)> done;
  std::mutex mutex;
  std::vector<std::shared_ptr<ChunkState>> chunks;
  size_t next_chunk = 0;  // chunks before it have been sent
  size_t remaining = 0;   // chunks not finished (sent or not)
  bool cancelled = false;
  std::map<const WorkerSlot*, int> in_flight;  // this job's chunks on each worker now
};

struct Dispatcher::ChunkState {
  int64_t first_row = 0;  // where its rows go in the job's output
  std::shared_ptr<WorkRequest> work;
  std::shared_ptr<WorkerSlot> worker;  // where it runs now
  int attempts = 0;
};

Dispatcher::Dispatcher(DispatcherOptions options, metrics::Registry& registry)
    : options_(options),
      registry_(registry),
      chunks_total_(registry.AddCounter("stamen_gateway_chunks_total", "Chunks sent to workers")),
      retries_total_(registry.AddCounter("stamen_gateway_retries_total", "Chunks retried on another worker")),
      unsent_sequences_total_(registry.AddCounter(
          "stamen_gateway_unsent_sequences_total",
          "Sequences of chunks never sent: their request was cancelled, failed or expired first")),
      healthy_workers_(registry.AddGauge("stamen_gateway_healthy_workers", "Workers passing their health check")),
      admission_refusals_total_(registry.AddCounter(
          "stamen_gateway_admission_refusals_total",
          "Requests refused at once (429) because the work queued could not finish within their deadline")),
      shed_requests_total_(registry.AddCounter(
          "stamen_gateway_shed_requests_total",
          "Admitted requests ended early (429) because the workers slowed and they could no longer finish in time")),
      admission_(0) {
  options_.chunk_tokens = std::max<int64_t>(options_.chunk_tokens, 1);
}

void Dispatcher::UpdateSaturationLocked() {
  const int64_t workers = std::max<int64_t>(static_cast<int64_t>(workers_.size()), 1);
  admission_.set_saturation_tokens(workers * options_.chunks_in_flight_per_worker * options_.chunk_tokens);
}

Dispatcher::~Dispatcher() {
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (maintenance_.joinable()) maintenance_.join();
}

std::shared_ptr<WorkerSlot> Dispatcher::NewSlot(std::shared_ptr<WorkerBackend> backend) {
  auto slot = std::make_shared<WorkerSlot>();
  slot->chunks = &registry_.AddCounter("stamen_gateway_worker_chunks_total", "Chunks sent, by worker",
                                       "worker=\"" + backend->address() + "\"");
  slot->backend = std::move(backend);
  return slot;
}

void Dispatcher::AddWorker(std::shared_ptr<WorkerBackend> backend) {
  auto slot = NewSlot(std::move(backend));
  std::lock_guard lock(mutex_);
  workers_.push_back(std::move(slot));
  healthy_workers_.Set(static_cast<int64_t>(workers_.size()));
  UpdateSaturationLocked();
}

Status Dispatcher::SetWorkerAddresses(const std::vector<std::string>& entries, BackendFactory factory) {
  for (const std::string& entry : entries) {
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) {
      return Status::Error("worker address '" + entry + "' is not host:port");
    }
  }
  {
    std::lock_guard lock(mutex_);
    entries_ = entries;
    factory_ = std::move(factory);
  }
  Resolve();
  if (workers().empty()) return Status::Error("no worker address could be resolved");
  return Status();
}

void Dispatcher::Resolve() {
  std::vector<std::string> entries;
  BackendFactory factory;
  {
    std::lock_guard lock(mutex_);
    entries = entries_;
    factory = factory_;
  }
  if (entries.empty()) return;
  std::vector<std::string> addresses;
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  for (const std::string& entry : entries) {
    const size_t colon = entry.rfind(':');
    const std::string host = entry.substr(0, colon);
    const std::string port = entry.substr(colon + 1);
    boost::system::error_code error;
    const auto results = resolver.resolve(host, port, error);
    if (error) {
      spdlog::warn("gateway: cannot resolve worker {}: {}", entry, error.message());
      continue;
    }
    for (const auto& result : results) {
      const auto endpoint = result.endpoint();
      const std::string address = endpoint.address().is_v6()
                                      ? "[" + endpoint.address().to_string() + "]:" + std::to_string(endpoint.port())
                                      : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
      if (std::find(addresses.begin(), addresses.end(), address) == addresses.end()) addresses.push_back(address);
    }
  }
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<WorkerSlot>> kept;
  for (const auto& worker : workers_) {
    if (std::find(addresses.begin(), addresses.end(), worker->backend->address()) != addresses.end()) {
      kept.push_back(worker);
    } else {
      spdlog::info("gateway: worker {} is gone from DNS", worker->backend->address());
    }
  }
  for (const std::string& address : addresses) {
    const bool known = std::any_of(kept.begin(), kept.end(),
                                   [&](const auto& worker) { return worker->backend->address() == address; });
    if (!known) {
      spdlog::info("gateway: worker {} added", address);
      kept.push_back(NewSlot(factory(address)));
    }
  }
  // A slot dropped here lives on while calls on it are in flight (they hold it).
  workers_ = std::move(kept);
  UpdateSaturationLocked();
}

void Dispatcher::Start() {
  maintenance_ = std::thread([this] { MaintenanceThread(); });
}

void Dispatcher::MaintenanceThread() {
  auto next_resolve = std::chrono::steady_clock::now() + options_.resolve_interval;
  std::unique_lock lock(stop_mutex_);
  while (!stopping_) {
    lock.unlock();
    if (std::chrono::steady_clock::now() >= next_resolve) {
      Resolve();
      next_resolve = std::chrono::steady_clock::now() + options_.resolve_interval;
    }
    int64_t healthy = 0;
    // One deadline for the round: a worker that is down holds its check until then (it waits
    // for a connection), so the round takes about the interval however many are down.
    const auto answer_by =
        std::chrono::steady_clock::now() + std::min(options_.health_interval, std::chrono::milliseconds(2000));
    for (const auto& worker : workers()) {
      const Status status = worker->backend->CheckHealth(TimeLeft(answer_by));
      const bool was_healthy = worker->healthy.exchange(status.ok());
      if (was_healthy && !status.ok()) spdlog::warn("gateway: worker {} is down: {}", worker->backend->address(), status.message());
      if (!was_healthy && status.ok()) spdlog::info("gateway: worker {} is up", worker->backend->address());
      healthy += status.ok();
    }
    healthy_workers_.Set(healthy);
    lock.lock();
    stop_.wait_for(lock, options_.health_interval, [this] { return stopping_; });
  }
}

std::vector<std::shared_ptr<WorkerSlot>> Dispatcher::workers() const {
  std::lock_guard lock(mutex_);
  return workers_;
}

bool Dispatcher::AnyHealthy() const {
  std::lock_guard lock(mutex_);
  return std::any_of(workers_.begin(), workers_.end(), [](const auto& worker) { return worker->healthy.load(); });
}

std::shared_ptr<WorkerSlot> Dispatcher::Pick(const WorkerSlot* avoid) {
  std::lock_guard lock(mutex_);
  return PickLocked(avoid, nullptr);
}

std::shared_ptr<WorkerSlot> Dispatcher::PickLocked(const WorkerSlot* avoid, const JobState* job) {
  if (workers_.empty()) return nullptr;
  // Least outstanding tokens among healthy workers; the starting point rotates so that ties
  // spread over all workers.
  const size_t start = rotation_.fetch_add(1) % workers_.size();
  std::shared_ptr<WorkerSlot> best;
  for (size_t i = 0; i < workers_.size(); ++i) {
    const auto& worker = workers_[(start + i) % workers_.size()];
    if (!worker->healthy.load() || worker.get() == avoid) continue;
    if (job) {
      const auto found = job->in_flight.find(worker.get());
      if (found != job->in_flight.end() && found->second >= options_.chunks_in_flight_per_worker) continue;
    }
    if (!best || worker->outstanding_tokens.load() < best->outstanding_tokens.load()) best = worker;
  }
  return best;
}

namespace {

// MaxSim's query (the job's sequence 0) put in front of a chunk of its documents.
void PrependQuery(const WorkRequest& job, WorkRequest& chunk) {
  const size_t query_bytes = static_cast<size_t>(job.lengths[0]) * sizeof(int32_t);
  chunk.lengths.insert(chunk.lengths.begin(), job.lengths[0]);
  chunk.token_ids.insert(0, job.token_ids, 0, query_bytes);
  if (!job.token_type_ids.empty()) chunk.token_type_ids.insert(0, job.token_type_ids, 0, query_bytes);
  if (!job.key_lengths.empty()) chunk.key_lengths.insert(chunk.key_lengths.begin(), job.key_lengths[0]);
}

// A failure of the connection to the worker or of its process (refused, reset, shutting down,
// a call cancelled that the gateway did not cancel): the worker is down until a health check
// passes. Load (a full queue, a call past its time) never marks a worker down: under overload
// that made workers flap down and up once a second (issue 45).
bool TransportFailure(StatusCode code, bool cancelled_by_gateway) {
  return code == StatusCode::kUnavailable || (code == StatusCode::kCancelled && !cancelled_by_gateway);
}

// Whether a failed chunk may succeed on another worker: after a transport failure, an internal
// error, or a call that hit its own timeout (a hung worker) with the request's deadline still
// ahead. A full queue (kResourceExhausted) is not retried: the other workers are as busy, and
// the client is better told 429 at once.
bool WorthRetrying(StatusCode code, bool cancelled_by_gateway) {
  return TransportFailure(code, cancelled_by_gateway) || code == StatusCode::kError ||
         code == StatusCode::kDeadlineExceeded;
}

}  // namespace

std::shared_ptr<Dispatcher::JobState> Dispatcher::Run(std::shared_ptr<WorkRequest> job,
                                                      std::function<void(WorkRequest&)> done) {
  auto state = std::make_shared<JobState>();
  state->job = job;
  state->done = std::move(done);
  job->columns = 0;
  job->row_offsets = server::RowOffsets(*job);
  // Cut whole sequences into chunks of about chunk_tokens tokens. MaxSim's query (sequence 0)
  // goes first in every chunk: each worker scores its documents against the query it computed
  // itself, and no document's vectors ever leave the worker.
  const auto* lengths = job->lengths.data();
  const size_t count = job->lengths.size();
  const bool max_sim = job->kind == server::WorkKind::kMaxSim;
  size_t first = max_sim ? 1 : 0;
  while (first < count) {
    size_t end = first;
    int64_t tokens = 0;
    while (end < count && (end == first || tokens + lengths[end] <= options_.chunk_tokens)) tokens += lengths[end++];
    auto chunk = std::make_shared<ChunkState>();
    chunk->first_row = job->row_offsets[first];
    chunk->work = server::CopySequences(*job, first, end);
    if (max_sim) PrependQuery(*job, *chunk->work);
    state->chunks.push_back(std::move(chunk));
    first = end;
  }
  state->remaining = state->chunks.size();
  if (state->chunks.empty()) {
    job->status = Status::Error(StatusCode::kInvalidArgument, "the request has no sequences");
    state->done(*job);
    return state;
  }
  if (Admit(state)) SendMoreChunks(state);
  return state;
}

std::string Dispatcher::ReserveBeforeTokenizing(int64_t tokens, std::chrono::steady_clock::time_point deadline,
                                                Reservation* reservation) {
  // The reservation's own address is its key; dropping the last copy releases it.
  struct Held {
    explicit Held(AdmissionControl* control) : admission(control) {}
    ~Held() { admission->Release(this); }
    AdmissionControl* admission;
  };
  auto held = std::make_shared<Held>(&admission_);
  std::string refusal = admission_.Reserve(held.get(), tokens, deadline);
  if (!refusal.empty()) {
    admission_refusals_total_.Increment();
    return refusal;
  }
  *reservation = std::move(held);
  return refusal;
}

bool Dispatcher::Admit(const std::shared_ptr<JobState>& job) {
  WorkRequest& whole = *job->job;
  const std::string refusal = admission_.Admit(job.get(), whole.total_tokens(), whole.deadline);
  if (refusal.empty()) {
    std::lock_guard lock(admitted_mutex_);
    admitted_jobs_[job.get()] = job;
    return true;
  }
  admission_refusals_total_.Increment();
  whole.status = Status::Error(StatusCode::kResourceExhausted, refusal);
  job->done(whole);
  return false;
}

void Dispatcher::Finish(const std::shared_ptr<JobState>& job) {
  admission_.Release(job.get());
  {
    std::lock_guard lock(admitted_mutex_);
    admitted_jobs_.erase(job.get());
  }
  job->done(*job->job);
}

void Dispatcher::Shed(const void* key) {
  std::shared_ptr<JobState> job;
  {
    std::lock_guard lock(admitted_mutex_);
    const auto found = admitted_jobs_.find(key);
    if (found != admitted_jobs_.end()) job = found->second.lock();
  }
  if (!job) return;
  {
    std::lock_guard lock(job->mutex);
    WorkRequest& whole = *job->job;
    if (whole.status.ok()) {
      whole.status = Status::Error(StatusCode::kResourceExhausted,
                                   "the workers slowed down and this request could no longer finish within its "
                                   "deadline; it was given up to let the requests before it finish");
    }
  }
  shed_requests_total_.Increment();
  spdlog::warn("gateway: workers slowed to {:.0f} tokens/s: a request was shed to keep the others within their "
               "deadlines", admission_.rate());
  Cancel(job);
}

void Dispatcher::SendMoreChunks(const std::shared_ptr<JobState>& job) {
  while (true) {
    std::shared_ptr<WorkerSlot> worker;
    std::shared_ptr<ChunkState> chunk;
    bool finished = false;
    {
      // The worker is picked and its room claimed under both locks (the dispatcher's first),
      // so that two chunks finishing at once cannot both take the same room.
      std::lock_guard workers_lock(mutex_);
      std::lock_guard lock(job->mutex);
      if (job->next_chunk == job->chunks.size()) return;
      WorkRequest& whole = *job->job;
      const bool expired = server::Clock::now() >= whole.deadline;
      if (job->cancelled || expired || !whole.status.ok()) {
        // Nothing more is sent: the chunks never sent end here.
        if (whole.status.ok()) {
          whole.status = job->cancelled ? Status::Error(StatusCode::kCancelled, "the request was cancelled")
                                        : Status::Error(StatusCode::kDeadlineExceeded,
                                                        "the request's deadline passed before it was computed");
        }
        size_t sequences = 0;
        for (size_t i = job->next_chunk; i < job->chunks.size(); ++i) sequences += job->chunks[i]->work->lengths.size();
        unsent_sequences_total_.Increment(sequences);
        job->remaining -= job->chunks.size() - job->next_chunk;
        job->next_chunk = job->chunks.size();
        finished = job->remaining == 0;
      } else {
        worker = PickLocked(nullptr, job.get());
        int in_flight = 0;
        for (const auto& [slot, chunks] : job->in_flight) in_flight += chunks;
        // No worker has room: the next chunk goes when one returns. With none in flight, no
        // worker is healthy at all, and SendChunk reports that.
        if (!worker && in_flight > 0) return;
        chunk = job->chunks[job->next_chunk++];
        if (worker) ++job->in_flight[worker.get()];
      }
    }
    if (finished) {
      job->job->output.clear();
      Finish(job);
      return;
    }
    if (chunk) SendChunk(job, chunk, std::move(worker));
  }
}

void Dispatcher::SendChunk(const std::shared_ptr<JobState>& job, const std::shared_ptr<ChunkState>& chunk,
                           std::shared_ptr<WorkerSlot> worker) {
  WorkRequest& work = *chunk->work;
  ++chunk->attempts;
  if (!worker) {
    work.status = Status::Error(StatusCode::kUnavailable, "no healthy worker to run the request");
    OnChunkDone(job, chunk, nullptr);
    return;
  }
  {
    std::lock_guard lock(job->mutex);
    chunk->worker = worker;
  }
  const int64_t tokens = work.total_tokens();
  worker->outstanding_tokens += tokens;
  worker->chunks->Increment();
  chunks_total_.Increment();
  work.on_done = [this, job, chunk, worker, tokens](WorkRequest&) {
    worker->outstanding_tokens -= tokens;
    OnChunkDone(job, chunk, worker);
  };
  worker->backend->Submit(chunk->work);
}

void Dispatcher::OnChunkDone(const std::shared_ptr<JobState>& job, const std::shared_ptr<ChunkState>& chunk,
                             const std::shared_ptr<WorkerSlot>& worker) {
  WorkRequest& work = *chunk->work;
  if (worker) {
    std::lock_guard lock(job->mutex);
    --job->in_flight[worker.get()];
  }
  const StatusCode code = work.status.code();
  bool cancelled;
  {
    std::lock_guard lock(job->mutex);
    cancelled = job->cancelled;
  }
  const bool deadline_left = server::Clock::now() < work.deadline;
  if (worker && WorthRetrying(code, cancelled) && !cancelled && deadline_left && chunk->attempts < 2) {
    // Retry once, elsewhere; with no other worker the first error stands.
    if (std::shared_ptr<WorkerSlot> other = Pick(worker.get())) {
      if (TransportFailure(code, cancelled) && worker->healthy.exchange(false)) {
        spdlog::warn("gateway: worker {} failed a call ({}); sending its work elsewhere until it passes a health check",
                     worker->backend->address(), work.status.message());
      }
      retries_total_.Increment();
      auto retry = server::CopySequences(work, 0, work.lengths.size());
      {
        std::lock_guard lock(job->mutex);
        chunk->work = std::move(retry);
        ++job->in_flight[other.get()];
      }
      SendChunk(job, chunk, std::move(other));
      return;
    }
  }

  // A call that succeeded proves the worker is up, whatever a health check said meanwhile
  // (a job's next chunks go only to healthy workers).
  if (worker && work.status.ok() && !worker->healthy.exchange(true)) {
    spdlog::info("gateway: worker {} is up (it answered a call)", worker->backend->address());
  }
  WorkRequest& whole = *job->job;
  bool finished;
  if (work.status.ok()) {
    for (const void* shed : admission_.Computed(job.get(), work.total_tokens())) Shed(shed);
  }
  {
    std::lock_guard lock(job->mutex);
    if (work.status.ok()) {
      if (whole.columns == 0) {
        whole.columns = work.columns;
        whole.output.assign(static_cast<size_t>(whole.row_offsets.back() * whole.columns) * sizeof(float), '\0');
      }
      if (work.columns == whole.columns) {
        std::memcpy(whole.output.data() + chunk->first_row * whole.columns * sizeof(float), work.output.data(),
                    work.output.size());
      } else if (whole.status.ok()) {
        whole.status = Status::Error("workers disagree on the output size (" + std::to_string(work.columns) +
                                     " vs " + std::to_string(whole.columns) + "): are they serving the same model?");
      }
      whole.timing.queue_microseconds = std::max(whole.timing.queue_microseconds, work.timing.queue_microseconds);
      whole.timing.compute_microseconds =
          std::max(whole.timing.compute_microseconds, work.timing.compute_microseconds);
      whole.timing.batches += work.timing.batches;
    } else if (whole.status.ok()) {
      whole.status = work.status;
    }
    chunk->work.reset();  // its bytes are copied; free them now
    finished = --job->remaining == 0;
  }
  if (!finished) {
    SendMoreChunks(job);
    return;
  }
  if (!whole.status.ok()) whole.output.clear();
  Finish(job);
}

void Dispatcher::Cancel(const std::shared_ptr<JobState>& job) {
  std::vector<std::pair<std::shared_ptr<WorkerSlot>, std::shared_ptr<WorkRequest>>> running;
  {
    std::lock_guard lock(job->mutex);
    job->cancelled = true;
    for (const auto& chunk : job->chunks) {
      if (chunk->work && chunk->worker) running.emplace_back(chunk->worker, chunk->work);
    }
  }
  for (const auto& [worker, work] : running) worker->backend->Cancel(*work);
  SendMoreChunks(job);  // ends the chunks never sent
}

}  // namespace stamen::gateway
