// The worker's scheduler: one queue of requests, cut into batches by a token budget, run
// through the engine on a compute thread while the next batch is cut and prepared and the
// previous one's results are scattered back.
//
// Requests take turns, not sequences: a batch is filled round robin, one sequence from each
// waiting request in turn (oldest first, each request's sequences in order), until the token
// budget is full. A query that arrives behind a 2,000-sequence bulk request joins the next
// batch instead of waiting for the whole bulk request, and batches stay as full as before.
// Priorities (high, normal, low) fill the batch in that order, but every class below the
// highest one waiting first gets a minimum share (an eighth of the token budget, at least one
// sequence) while it has work queued, and every eighth batch is opened by the oldest request
// waiting, so that no request starves: not one of another step kind (pooling, embed or score)
// behind busier work, nor a sequence longer than the budget behind shorter ones.
//
//   Submit ──► queue ──cut──► prepare ──► compute thread: Step (launch) … Wait ──► scatter ──► on_done
//                  ▲ (loop thread)                                               (loop thread)
//                  └── requests arriving while a batch computes merge into the next batch
//
// Steps in flight (SchedulerOptions::steps_in_flight): on a GPU, where Step only enqueues,
//   compute thread:  launch N ─ launch N+1 ─ wait N ─ launch N+2 ─ wait N+1 ─ …
//   loop thread:     cut N+1 while N computes; scatter N while N+1 computes
// so the device never idles while the host stages the next batch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "engine/engine.h"
#include "server/request_validation.h"
#include "server/work_request.h"

namespace stamen::server {

struct SchedulerOptions {
  int64_t max_batch_tokens = 2048;  // tokens per batch (a longer single sequence runs alone)
  int64_t max_batch_sequences = 256;
  int64_t max_queued_tokens = 1 << 20;  // beyond: Submit fails with kResourceExhausted
  // Batches launched on the engine before the oldest is waited for. 1 where Step computes
  // (the CPU): a second would only delay the first one's answers. 2 where Step enqueues work
  // on a device and returns (CUDA): batch N+1 is staged and launched while N computes.
  int steps_in_flight = 1;
  // A batch that starts a query beside bulk work is cut at this many tokens (0: never cut
  // short). A query is a request not started yet whose tokens all fit in half of this budget;
  // bulk work is any other request that could share the batch. A query arriving behind bulk
  // work then waits for the batch computing and one short batch, not two full ones; batches
  // without a new query stay full. `stamen serve` and `stamen worker` default it to half of
  // --max-batch-tokens (LocalWorker).
  int64_t query_batch_tokens = 0;
};

// Of each batch's token budget, what a priority class below the highest one waiting is
// guaranteed while it has work queued (at least one sequence).
constexpr int64_t kMinimumShareDivisor = 8;
// Every this-many-th batch is opened by the oldest request waiting, whatever its priority or
// step kind, so that no request waits without bound (see CutLocked).
constexpr uint64_t kOldestLeadsEvery = 8;

// One batch as it ran, for logs and tests.
struct BatchRecord {
  uint64_t index = 0;
  int requests = 0;
  int sequences = 0;
  int64_t tokens = 0;
  double queue_milliseconds = 0;    // oldest sequence's wait before this batch was cut
  double prepare_milliseconds = 0;  // packing ids into the engine's batch
  double compute_milliseconds = 0;  // engine Step until its result was ready
  double launch_milliseconds = 0;   // inside Step (all of the compute on the CPU)
  double wait_milliseconds = 0;     // in LazyResult::Wait
  double scatter_milliseconds = 0;  // copying results into the requests
  // Sequences each request put in this batch, in the order the cut took requests (highest
  // priority first, then oldest first): the fairness of the cut, for logs and tests.
  std::vector<int> sequences_per_request;
  int sequences_by_priority[kPriorities] = {0, 0, 0};  // indexed by Priority
  int64_t token_budget = 0;  // max_batch_tokens, or query_batch_tokens when it started a query
  int steps_in_flight = 0;   // launched and not yet waited for, this batch included, at its launch
};

struct SchedulerMetrics {
  explicit SchedulerMetrics(metrics::Registry& registry);
  metrics::Gauge& queued_sequences;
  metrics::Gauge& queued_tokens;
  metrics::Histogram& batch_tokens;
  metrics::Histogram& batch_sequences;
  metrics::Histogram* queue_seconds[kPriorities];  // by Priority
  metrics::Gauge& queued_requests;
  metrics::Histogram& compute_seconds;
  metrics::Gauge& steps_in_flight;
  metrics::Counter& requests_ok;
  metrics::Counter& requests_invalid;
  metrics::Counter& requests_rejected;  // queue full or draining
  metrics::Counter& requests_cancelled;
  metrics::Counter& requests_expired;
  metrics::Counter& requests_failed;
  metrics::Counter& dropped_sequences;  // queued sequences of cancelled or expired requests, never computed
  metrics::Counter& sequences;
  metrics::Counter& tokens;
};

class Scheduler {
 public:
  using StepFunction =
      std::function<StatusOr<engine::LazyResult>(const engine::Batch&, const engine::StepOptions&)>;

  // `metrics` may be null; it must outlive the scheduler.
  Scheduler(StepFunction step, ModelLimits limits, SchedulerOptions options, SchedulerMetrics* metrics);
  // Drains, then stops the threads.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Validates and queues `request`. On error nothing is queued, on_done is not called and the
  // error says why: kInvalidArgument (bad ids, lengths, options), kResourceExhausted (queue
  // full), kUnavailable (draining).
  Status Submit(std::shared_ptr<WorkRequest> request);
  // Marks `request` cancelled and wakes the scheduler, which drops its queued sequences and
  // finishes it with kCancelled once no batch of it is computing.
  void Cancel(WorkRequest& request);
  // Refuses new requests from now on; returns once every accepted request has finished.
  void Drain();
  bool draining() const;

  const ModelLimits& limits() const { return limits_; }
  const SchedulerOptions& options() const { return options_; }
  struct QueueDepth {
    int64_t sequences = 0;
    int64_t tokens = 0;
  };
  QueueDepth queue_depth() const;
  // The most recent batches (up to 4096), oldest first.
  std::vector<BatchRecord> RecentBatches() const;

 private:
  struct Batch;
  void LoopThread();
  void ComputeThread();
  // With mutex_ held: removes cancelled/expired requests' queued sequences; returns the
  // requests that can be finished now.
  std::vector<std::shared_ptr<WorkRequest>> PurgeLocked();
  std::unique_ptr<Batch> CutLocked();
  void PublishQueueLocked();  // the queue gauges
  void Prepare(Batch& batch);
  void Launch(Batch& batch);  // the engine's Step (on the CPU it computes; on a GPU it enqueues)
  void Scatter(Batch& batch);
  // Finishes `request` if nothing of it is queued or computing any more.
  void FinishIfDone(const std::shared_ptr<WorkRequest>& request);
  void CountFinished(const WorkRequest& request);

  StepFunction step_;
  ModelLimits limits_;
  SchedulerOptions options_;
  SchedulerMetrics* metrics_;

  mutable std::mutex mutex_;
  std::condition_variable wake_loop_;
  std::condition_variable wake_compute_;
  std::condition_variable drained_;
  std::deque<std::shared_ptr<WorkRequest>> queue_;  // requests with sequences not yet in a batch
  int64_t queued_sequences_ = 0;
  int64_t queued_tokens_ = 0;
  int64_t unfinished_requests_ = 0;
  bool draining_ = false;
  bool stopping_ = false;
  int in_flight_ = 0;                             // batches cut and not yet handed back
  std::deque<std::unique_ptr<Batch>> to_compute_;  // handed from the loop to the compute thread
  std::deque<std::unique_ptr<Batch>> computed_;    // handed back, oldest first
  uint64_t next_batch_index_ = 0;

  mutable std::mutex records_mutex_;
  std::deque<BatchRecord> records_;

  std::thread compute_thread_;
  std::thread loop_thread_;
};

}  // namespace stamen::server
