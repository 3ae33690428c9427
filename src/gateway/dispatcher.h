// The gateway's key job: a request with many sequences is split into chunks by token count,
// the chunks run concurrently on the workers with the fewest outstanding tokens, and the
// results are put back together in input order. Chunks go out progressively: each request
// has at most `chunks_in_flight_per_worker` chunks on any one worker, and the next one is sent
// when one returns, so that a bulk request never fills a worker's queue ahead of the requests
// that arrive after it (the worker's scheduler then gives each request its turn). A failed chunk is retried once on another
// worker; no result is lost or duplicated. Workers are health-checked and, when given by DNS
// name, re-resolved so that a Kubernetes headless Service's pods come and go.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "gateway/admission.h"
#include "gateway/worker_backend.h"

namespace stamen::gateway {

struct DispatcherOptions {
  int64_t chunk_tokens = 2048;  // tokens per chunk (whole sequences; a longer one goes alone)
  // Two keep a worker busy (one chunk computing, the next queued behind it, sent while the
  // previous one computed) while holding no more of its queue than that.
  int chunks_in_flight_per_worker = 2;
  std::chrono::milliseconds health_interval{1000};
  std::chrono::milliseconds resolve_interval{10000};
  std::chrono::milliseconds call_timeout{60000};  // per chunk call to a gRPC worker
};

// One worker as the dispatcher tracks it.
struct WorkerSlot {
  std::shared_ptr<WorkerBackend> backend;
  std::atomic<int64_t> outstanding_tokens{0};
  std::atomic<bool> healthy{true};
  metrics::Counter* chunks = nullptr;  // chunks sent to it
};

class Dispatcher {
 public:
  using BackendFactory = std::function<std::shared_ptr<WorkerBackend>(const std::string& address)>;

  Dispatcher(DispatcherOptions options, metrics::Registry& registry);
  ~Dispatcher();

  // A fixed worker (the in-process one of `stamen serve`).
  void AddWorker(std::shared_ptr<WorkerBackend> backend);
  // Workers given as host:port entries; a host that resolves to several addresses gives one
  // worker per address. Resolved now and every resolve_interval.
  Status SetWorkerAddresses(const std::vector<std::string>& entries, BackendFactory factory);
  // Starts the health checks (and re-resolution).
  void Start();

  struct JobState;
  // Runs every sequence of `job` and calls `done` once (from any thread) with job.status,
  // job.output (rows × columns floats in order), job.row_offsets (server::RowOffsets: whose
  // rows are whose) and job.timing (the slowest chunk's queue and compute time) filled.
  // job.on_done is not used. The handle cancels it.
  std::shared_ptr<JobState> Run(std::shared_ptr<server::WorkRequest> job,
                                std::function<void(server::WorkRequest&)> done);
  // Drops the job's chunks that have not run yet (the job then ends with kCancelled).
  void Cancel(const std::shared_ptr<JobState>& job);

  bool AnyHealthy() const;
  // The workers' rate until one is measured (the sum of their warm-up rates).
  void SeedRate(double tokens_per_second) { admission_.SeedRate(tokens_per_second); }
  // Seconds a client refused for load should wait before trying again (Retry-After).
  int RetryAfterSeconds() const { return admission_.RetryAfterSeconds(); }
  // Why a request of at least `tokens` due at `deadline` would be refused for load now (empty:
  // it may be admitted); a refusal is counted as admission's are. Asked before a body is
  // tokenized, with a lower bound of its tokens (least_tokens.h). When it may be admitted,
  // `*reservation` holds `tokens` in the budget (AdmissionControl::Reserve) until it is dropped,
  // which the caller does just before the request runs and is admitted by its real count. It
  // must not outlive the dispatcher.
  using Reservation = std::shared_ptr<void>;
  std::string ReserveBeforeTokenizing(int64_t tokens, std::chrono::steady_clock::time_point deadline,
                                      Reservation* reservation);
  std::vector<std::shared_ptr<WorkerSlot>> workers() const;

 private:
  struct ChunkState;
  void SendChunk(const std::shared_ptr<JobState>& job, const std::shared_ptr<ChunkState>& chunk,
                 std::shared_ptr<WorkerSlot> worker);
  // The healthy worker with the fewest outstanding tokens, other than `avoid`.
  std::shared_ptr<WorkerSlot> Pick(const WorkerSlot* avoid);
  // The same with mutex_ held; with `job` (its mutex held too), only among the workers that
  // hold fewer than chunks_in_flight_per_worker of its chunks.
  std::shared_ptr<WorkerSlot> PickLocked(const WorkerSlot* avoid, const JobState* job);
  // Sends the job's next chunks while a worker has room for them; once the job is cancelled
  // or has failed, ends the chunks never sent instead.
  void SendMoreChunks(const std::shared_ptr<JobState>& job);
  void OnChunkDone(const std::shared_ptr<JobState>& job, const std::shared_ptr<ChunkState>& chunk,
                   const std::shared_ptr<WorkerSlot>& worker);
  void Resolve();
  void MaintenanceThread();
  std::shared_ptr<WorkerSlot> NewSlot(std::shared_ptr<WorkerBackend> backend);
  // Admits `job` (admission.h), or ends it at once with kResourceExhausted; false then.
  bool Admit(const std::shared_ptr<JobState>& job);
  // Releases the job's admission and calls its `done`.
  void Finish(const std::shared_ptr<JobState>& job);
  // Ends an admitted job that can no longer finish in time (admission.h, Computed) with
  // kResourceExhausted, its work not yet computed cancelled.
  void Shed(const void* key);
  // The admitted tokens beyond which every worker is busy: a computing and a queued chunk each.
  void UpdateSaturationLocked();

  DispatcherOptions options_;
  metrics::Registry& registry_;
  metrics::Counter& chunks_total_;
  metrics::Counter& retries_total_;
  metrics::Counter& unsent_sequences_total_;
  metrics::Gauge& healthy_workers_;
  metrics::Counter& admission_refusals_total_;
  metrics::Counter& shed_requests_total_;
  AdmissionControl admission_;
  std::mutex admitted_mutex_;
  std::map<const void*, std::weak_ptr<JobState>> admitted_jobs_;  // for Shed

  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<WorkerSlot>> workers_;
  std::vector<std::string> entries_;
  BackendFactory factory_;
  std::atomic<uint64_t> rotation_{0};

  std::mutex stop_mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread maintenance_;
};

}  // namespace stamen::gateway
