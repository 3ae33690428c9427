#include "server/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "model_folder/bge_m3.h"
#include "model_folder/model_tokenizer.h"
#include "engine/finish_rows.h"
#include "engine/tensor.h"
#include "server/max_sim.h"

namespace stamen::server {

namespace {

double MillisecondsBetween(Clock::time_point begin, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - begin).count();
}

uint64_t MicrosecondsBetween(Clock::time_point begin, Clock::time_point end) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(end - begin).count());
}

// Requests whose sequences may share a batch: one engine Step runs one output kind, one
// pooling, and pools either whole sequences or spans (normalisation and dimensions are
// applied per request when scattering).
struct StepKey {
  WorkKind kind;
  std::optional<engine::ops::PoolingMode> pooling;
  bool spans = false;
  bool operator==(const StepKey&) const = default;
};

StepKey KeyOf(const WorkRequest& request) {
  const bool embed = request.kind == WorkKind::kEmbed;
  return {request.kind, embed ? request.pooling : std::nullopt, embed && !request.span_counts.empty()};
}

constexpr size_t kMaxRecords = 4096;

// kTokenVectors and kMaxSim: the step gives every token's vector; the sequences
// [first_sequence, + sequences) of `request` start at token `batch_token` of the batch. Their
// kept vectors become rows of the output, or (kMaxSim) the query's vectors and the documents'
// scores.
void ScatterTokenVectors(const engine::LazyResult& result, int64_t batch_token, size_t first_sequence, size_t sequences,
                         WorkRequest& request) {
  float* output = reinterpret_cast<float*>(request.output.data());
  const int64_t width = result.values().dim(1);
  std::vector<float> kept;
  for (size_t sequence = first_sequence; sequence < first_sequence + sequences; ++sequence) {
    // The sequence's kept token vectors, in order.
    kept.clear();
    const int64_t first_token = request.token_offsets[sequence];
    for (int64_t token = 0; token < request.lengths[sequence]; ++token) {
      if (!request.KeepsToken(sequence, first_token + token)) continue;
      const std::span<const float> row = result.Row(batch_token + token);
      kept.insert(kept.end(), row.begin(), row.end());
    }
    batch_token += request.lengths[sequence];
    const int64_t rows = static_cast<int64_t>(kept.size()) / width;
    if (request.kind == WorkKind::kTokenVectors) {
      std::memcpy(output + request.row_offsets[sequence] * width, kept.data(), kept.size() * sizeof(float));
    } else if (sequence == 0) {
      // The query comes first in the request, so in its first batch: the documents after it
      // (in this batch or later ones, scattered in order) find its vectors here.
      request.query_vectors = kept;
    } else {
      output[request.row_offsets[sequence]] =
          MaxSim(request.query_vectors.data(), static_cast<int64_t>(request.query_vectors.size()) / width, kept.data(),
                 rows, width);
    }
  }
}

}  // namespace

ModelLimits ModelLimits::Of(const engine::Engine& engine) {
  ModelLimits limits = ModelLimits::Of(engine.profile());
  // The CUDA engine does not run bge-m3's heads (they run on the host).
  if (engine.device() != engine::Device::kCpu) limits.bge_m3 = false;
  return limits;
}

SchedulerMetrics::SchedulerMetrics(metrics::Registry& registry)
    : queued_sequences(registry.AddGauge("stamen_queue_sequences", "Sequences waiting for a batch")),
      queued_tokens(registry.AddGauge("stamen_queue_tokens", "Tokens waiting for a batch")),
      batch_tokens(registry.AddHistogram("stamen_batch_tokens", "Tokens per batch", metrics::ExponentialBuckets(16, 2, 12))),
      batch_sequences(registry.AddHistogram("stamen_batch_sequences", "Sequences per batch",
                                            metrics::ExponentialBuckets(1, 2, 10))),
      queue_seconds{&registry.AddHistogram("stamen_queue_seconds", "Time from a request's arrival to its first batch, by priority",
                                           metrics::ExponentialBuckets(0.0001, 2, 18), "priority=\"high\""),
                    &registry.AddHistogram("stamen_queue_seconds", "", metrics::ExponentialBuckets(0.0001, 2, 18),
                                           "priority=\"normal\""),
                    &registry.AddHistogram("stamen_queue_seconds", "", metrics::ExponentialBuckets(0.0001, 2, 18),
                                           "priority=\"low\"")},
      queued_requests(registry.AddGauge("stamen_queue_requests", "Requests with sequences waiting for a batch")),
      compute_seconds(registry.AddHistogram("stamen_compute_seconds", "Engine time per batch",
                                            metrics::ExponentialBuckets(0.0001, 2, 18))),
      steps_in_flight(registry.AddGauge("stamen_steps_in_flight", "Batches launched on the engine and not yet waited for")),
      requests_ok(registry.AddCounter("stamen_worker_requests_total", "Requests by outcome", "status=\"ok\"")),
      requests_invalid(registry.AddCounter("stamen_worker_requests_total", "", "status=\"invalid_argument\"")),
      requests_rejected(registry.AddCounter("stamen_worker_requests_total", "", "status=\"rejected\"")),
      requests_cancelled(registry.AddCounter("stamen_worker_requests_total", "", "status=\"cancelled\"")),
      requests_expired(registry.AddCounter("stamen_worker_requests_total", "", "status=\"deadline_exceeded\"")),
      requests_failed(registry.AddCounter("stamen_worker_requests_total", "", "status=\"error\"")),
      dropped_sequences(registry.AddCounter("stamen_dropped_sequences_total",
                                            "Queued sequences of cancelled or expired requests, never computed")),
      sequences(registry.AddCounter("stamen_sequences_total", "Sequences computed")),
      tokens(registry.AddCounter("stamen_tokens_total", "Tokens computed")) {}

// A batch from cut to scatter.
struct Scheduler::Batch {
  struct Slice {
    std::shared_ptr<WorkRequest> request;
    size_t first_sequence = 0;
    size_t sequences = 0;
    int64_t first_row = 0;  // of the step's result
    int64_t rows = 0;
    int64_t first_token = 0;  // of the batch (Prepare): where token-level results start
  };
  BatchRecord record;
  StepKey key{};
  std::vector<Slice> slices;
  std::vector<int32_t> token_ids, cu_seqlens, token_type_ids;
  std::vector<int32_t> spans;  // late chunking: (begin, end) pairs into the batch's tokens
  std::vector<int32_t> key_lengths;  // per sequence, when a request sets them (engine::Batch)
  std::vector<int32_t> adapters;     // per sequence, when a request names a task adapter (engine::Batch)
  bool any_token_types = false;
  Clock::time_point cut_time;
  Clock::time_point launch_time;
  StatusOr<engine::LazyResult> result = Status::Error("not computed");
};

Scheduler::Scheduler(StepFunction step, ModelLimits limits, SchedulerOptions options, SchedulerMetrics* metrics)
    : step_(std::move(step)), limits_(limits), options_(options), metrics_(metrics) {
  options_.max_batch_tokens = std::max<int64_t>(options_.max_batch_tokens, 1);
  options_.max_batch_sequences = std::max<int64_t>(options_.max_batch_sequences, 1);
  options_.steps_in_flight = std::clamp(options_.steps_in_flight, 1, 2);
  compute_thread_ = std::thread([this] { ComputeThread(); });
  loop_thread_ = std::thread([this] { LoopThread(); });
}

Scheduler::~Scheduler() {
  Drain();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_loop_.notify_all();
  wake_compute_.notify_all();
  loop_thread_.join();
  compute_thread_.join();
}

Status Scheduler::Submit(std::shared_ptr<WorkRequest> request) {
  Status valid = ValidateWorkRequest(*request, limits_);
  if (!valid.ok()) {
    if (metrics_) metrics_->requests_invalid.Increment();
    return valid;
  }
  request->token_offsets.assign(1, 0);
  for (int32_t length : request->lengths) request->token_offsets.push_back(request->token_offsets.back() + length);
  request->row_offsets = RowOffsets(*request);
  request->span_offsets = SpanOffsets(*request);
  request->columns = request->kind == WorkKind::kScore        ? limits_.num_labels
                     : request->kind == WorkKind::kTokenEmbed ? limits_.hidden_size
                     : request->kind == WorkKind::kDenseSparseColbert
                         ? engine::BgeM3RowLayout{.hidden_size = limits_.hidden_size}.columns()
                     : request->kind == WorkKind::kMaxSim     ? 1
                     : request->dimensions > 0                ? request->dimensions
                                                              : limits_.embedding_width;
  if (request->kind == WorkKind::kEmbed && !request->pooling) request->pooling = limits_.default_pooling;
  request->output.assign(static_cast<size_t>(request->row_offsets.back() * request->columns) * sizeof(float), '\0');
  request->submitted = Clock::now();
  const int64_t tokens = request->total_tokens();
  {
    std::lock_guard lock(mutex_);
    if (draining_) {
      if (metrics_) metrics_->requests_rejected.Increment();
      return Status::Error(StatusCode::kUnavailable, "the worker is shutting down and accepts no new requests");
    }
    if (queued_tokens_ + tokens > options_.max_queued_tokens) {
      if (metrics_) metrics_->requests_rejected.Increment();
      return Status::Error(StatusCode::kResourceExhausted,
                           "queue full: " + std::to_string(queued_tokens_) + " tokens queued, " +
                               std::to_string(tokens) + " more would exceed --max-queued-tokens " +
                               std::to_string(options_.max_queued_tokens));
    }
    queue_.push_back(std::move(request));
    queued_sequences_ += static_cast<int64_t>(queue_.back()->lengths.size());
    queued_tokens_ += tokens;
    ++unfinished_requests_;
    PublishQueueLocked();
  }
  wake_loop_.notify_one();
  return Status();
}

void Scheduler::Cancel(WorkRequest& request) {
  request.cancelled.store(true);
  std::lock_guard lock(mutex_);  // so the loop cannot miss the wake-up between its check and its wait
  wake_loop_.notify_one();
}

void Scheduler::Drain() {
  std::unique_lock lock(mutex_);
  if (!draining_ && unfinished_requests_ > 0) {
    spdlog::info("scheduler: draining: finishing {} accepted requests ({} sequences still queued)",
                 unfinished_requests_, queued_sequences_);
  }
  draining_ = true;
  drained_.wait(lock, [this] { return unfinished_requests_ == 0; });
}

bool Scheduler::draining() const {
  std::lock_guard lock(mutex_);
  return draining_;
}

Scheduler::QueueDepth Scheduler::queue_depth() const {
  std::lock_guard lock(mutex_);
  return {queued_sequences_, queued_tokens_};
}

std::vector<BatchRecord> Scheduler::RecentBatches() const {
  std::lock_guard lock(records_mutex_);
  return {records_.begin(), records_.end()};
}

std::vector<std::shared_ptr<WorkRequest>> Scheduler::PurgeLocked() {
  std::vector<std::shared_ptr<WorkRequest>> removed;
  const Clock::time_point now = Clock::now();
  for (auto it = queue_.begin(); it != queue_.end();) {
    WorkRequest& request = **it;
    const bool cancelled = request.cancelled.load();
    const bool expired = now >= request.deadline;
    if (!cancelled && !expired && request.status.ok()) {
      ++it;
      continue;
    }
    if (request.status.ok()) {
      request.status = cancelled ? Status::Error(StatusCode::kCancelled, "the request was cancelled")
                                 : Status::Error(StatusCode::kDeadlineExceeded,
                                                 "the request's deadline passed before it was computed");
    }
    const int64_t sequences = static_cast<int64_t>(request.lengths.size() - request.next_sequence);
    const int64_t tokens = request.token_offsets.back() - request.token_offsets[request.next_sequence];
    queued_sequences_ -= sequences;
    queued_tokens_ -= tokens;
    if (metrics_) metrics_->dropped_sequences.Increment(static_cast<uint64_t>(sequences));
    request.next_sequence = request.lengths.size();
    removed.push_back(std::move(*it));
    it = queue_.erase(it);
  }
  if (!removed.empty()) PublishQueueLocked();
  return removed;
}

namespace {

// A queued request as one cut sees it: how many of its sequences this batch takes.
struct Candidate {
  std::shared_ptr<WorkRequest> request;
  size_t first_sequence = 0;
  size_t taken = 0;
};

// The batch being filled: its budget and what it holds so far.
struct Fill {
  int64_t max_tokens = 0;
  int64_t max_sequences = 0;
  int64_t tokens = 0;
  int64_t sequences = 0;

  void Take(Candidate& candidate) {
    WorkRequest& request = *candidate.request;
    tokens += request.lengths[request.next_sequence];
    ++sequences;
    ++candidate.taken;
    ++request.next_sequence;
  }

  // Takes sequences from `candidates` round robin, one from each in turn, oldest first, until
  // the batch is full, the candidates have no more, or the class has `class_limit` tokens.
  // A request whose next sequence does not fit is passed over for the rest of the call; the
  // first sequence of a batch always fits (a longer one runs alone).
  void RoundRobin(std::vector<Candidate>& candidates, int64_t class_limit) {
    std::vector<bool> passed_over(candidates.size(), false);
    int64_t class_tokens = 0;
    for (bool took = true; took;) {
      took = false;
      for (size_t i = 0; i < candidates.size(); ++i) {
        WorkRequest& request = *candidates[i].request;
        if (passed_over[i] || request.next_sequence == request.lengths.size()) continue;
        const int64_t length = request.lengths[request.next_sequence];
        const bool fits = sequences == 0 || (tokens + length <= max_tokens && sequences + 1 <= max_sequences &&
                                             (class_tokens == 0 || class_tokens + length <= class_limit));
        if (!fits) {
          passed_over[i] = true;
          continue;
        }
        class_tokens += length;
        Take(candidates[i]);
        took = true;
      }
    }
  }
};

}  // namespace

void Scheduler::PublishQueueLocked() {
  if (!metrics_) return;
  metrics_->queued_sequences.Set(queued_sequences_);
  metrics_->queued_tokens.Set(queued_tokens_);
  metrics_->queued_requests.Set(static_cast<int64_t>(queue_.size()));
}

std::unique_ptr<Scheduler::Batch> Scheduler::CutLocked() {
  auto batch = std::make_unique<Batch>();
  batch->cut_time = Clock::now();
  batch->record.index = next_batch_index_++;
  // The leader opens the batch and sets its step kind (requests of another kind keep their
  // place for a later batch): the oldest request of the highest priority waiting, but every
  // kOldestLeadsEvery-th batch the oldest request of all, so that every request's wait is
  // bounded (one of another step kind behind busier work, a sequence longer than the budget
  // behind shorter ones).
  const WorkRequest* leader = queue_.front().get();
  if (batch->record.index % kOldestLeadsEvery != kOldestLeadsEvery - 1) {
    for (const auto& request : queue_) {
      if (request->priority < leader->priority) leader = request.get();
    }
  }
  batch->key = KeyOf(*leader);
  // A query beside bulk work cuts the batch short (SchedulerOptions::query_batch_tokens).
  bool has_query = false;
  bool has_bulk = false;
  for (const auto& request : queue_) {
    if (KeyOf(*request) != batch->key) continue;
    const bool query = options_.query_batch_tokens > 0 && request->next_sequence == 0 &&
                       2 * request->total_tokens() <= options_.query_batch_tokens;
    (query ? has_query : has_bulk) = true;
  }
  batch->record.token_budget = has_query && has_bulk
                                   ? std::min(options_.max_batch_tokens, options_.query_batch_tokens)
                                   : options_.max_batch_tokens;
  std::vector<Candidate> classes[kPriorities];
  Fill fill{.max_tokens = batch->record.token_budget, .max_sequences = options_.max_batch_sequences};
  for (const auto& request : queue_) {
    if (KeyOf(*request) != batch->key) continue;
    std::vector<Candidate>& same_class = classes[static_cast<int>(request->priority)];
    same_class.push_back({request, request->next_sequence, 0});
    if (request.get() == leader) fill.Take(same_class.back());
  }
  // Every class below the highest one waiting is first given its minimum share, then the
  // classes fill what is left in priority order.
  int highest = 0;
  while (classes[highest].empty()) ++highest;
  const int64_t minimum_share = std::max<int64_t>(fill.max_tokens / kMinimumShareDivisor, 1);
  for (int priority = highest + 1; priority < kPriorities; ++priority) fill.RoundRobin(classes[priority], minimum_share);
  for (int priority = highest; priority < kPriorities; ++priority) {
    fill.RoundRobin(classes[priority], std::numeric_limits<int64_t>::max());
  }

  Clock::time_point oldest = batch->cut_time;
  for (int priority = 0; priority < kPriorities; ++priority) {
    for (Candidate& candidate : classes[priority]) {
      if (candidate.taken == 0) continue;
      WorkRequest& request = *candidate.request;
      if (request.timing.batches == 0) {
        request.timing.queue_microseconds = MicrosecondsBetween(request.submitted, batch->cut_time);
        if (metrics_) metrics_->queue_seconds[priority]->Observe(request.timing.queue_microseconds * 1e-6);
      }
      ++request.timing.batches;
      ++request.batches_in_flight;
      oldest = std::min(oldest, request.submitted);
      // Rows are laid out slice after slice (Prepare), whatever order the cut took them in.
      const int64_t first_row = batch->slices.empty() ? 0 : batch->slices.back().first_row + batch->slices.back().rows;
      const int64_t rows = request.row_offsets[candidate.first_sequence + candidate.taken] -
                           request.row_offsets[candidate.first_sequence];
      batch->slices.push_back({std::move(candidate.request), candidate.first_sequence, candidate.taken, first_row, rows});
      batch->record.sequences_per_request.push_back(static_cast<int>(candidate.taken));
      batch->record.sequences_by_priority[priority] += static_cast<int>(candidate.taken);
    }
  }
  std::erase_if(queue_, [](const auto& request) { return request->next_sequence == request->lengths.size(); });
  queued_sequences_ -= fill.sequences;
  queued_tokens_ -= fill.tokens;
  PublishQueueLocked();
  batch->record.requests = static_cast<int>(batch->slices.size());
  batch->record.sequences = static_cast<int>(fill.sequences);
  batch->record.tokens = fill.tokens;
  batch->record.queue_milliseconds = MillisecondsBetween(oldest, batch->cut_time);
  return batch;
}

void Scheduler::Prepare(Batch& batch) {
  const Clock::time_point start = Clock::now();
  batch.token_ids.resize(batch.record.tokens);
  batch.token_type_ids.clear();
  batch.cu_seqlens.assign(1, 0);
  batch.spans.clear();
  batch.key_lengths.clear();
  batch.adapters.clear();
  bool any_key_lengths = false, any_adapter = false;
  for (const Batch::Slice& slice : batch.slices) {
    if (!slice.request->token_type_ids.empty()) batch.any_token_types = true;
    // Only a count that limits its sequence's keys makes a list: all zeros means every token (a
    // model that cannot limit keys, jina-colbert-v2's backbone, still runs such requests).
    for (const int32_t keys : slice.request->key_lengths) any_key_lengths = any_key_lengths || keys > 0;
    if (slice.request->adapter >= 0) any_adapter = true;
  }
  if (batch.any_token_types) batch.token_type_ids.assign(batch.record.tokens, 0);
  for (Batch::Slice& slice : batch.slices) {
    const WorkRequest& request = *slice.request;
    slice.first_token = batch.cu_seqlens.back();
    const int64_t first_token = request.token_offsets[slice.first_sequence];
    const int64_t end_token = request.token_offsets[slice.first_sequence + slice.sequences];
    const int64_t destination = batch.cu_seqlens.back();
    std::memcpy(batch.token_ids.data() + destination, request.token_ids.data() + first_token * sizeof(int32_t),
                (end_token - first_token) * sizeof(int32_t));
    if (!request.token_type_ids.empty()) {
      std::memcpy(batch.token_type_ids.data() + destination,
                  request.token_type_ids.data() + first_token * sizeof(int32_t),
                  (end_token - first_token) * sizeof(int32_t));
    }
    for (size_t sequence = slice.first_sequence; sequence < slice.first_sequence + slice.sequences; ++sequence) {
      const int32_t sequence_start = batch.cu_seqlens.back();
      for (int64_t span = request.span_offsets[sequence]; span < request.span_offsets[sequence + 1]; ++span) {
        batch.spans.push_back(sequence_start + request.spans[2 * span]);
        batch.spans.push_back(sequence_start + request.spans[2 * span + 1]);
      }
      batch.cu_seqlens.push_back(sequence_start + request.lengths[sequence]);
      if (any_key_lengths) {
        // 0 (or none sent): every token of the sequence is a key.
        const int32_t keys = request.key_lengths.empty() ? 0 : request.key_lengths[sequence];
        batch.key_lengths.push_back(keys > 0 ? keys : request.lengths[sequence]);
      }
      // Requests with different tasks share the batch: the engine adds each sequence's adapter.
      if (any_adapter) batch.adapters.push_back(request.adapter);
    }
  }
  batch.record.prepare_milliseconds = MillisecondsBetween(start, Clock::now());
}

void Scheduler::ComputeThread() {
  // Batches launched (Step returned) and not yet waited for, oldest first. With one step in
  // flight this is Step then Wait; with two, batch N+1 is staged and launched while N still
  // computes on the device, and only then does the thread wait for N.
  std::deque<std::unique_ptr<Batch>> launched;
  std::unique_lock lock(mutex_);
  while (true) {
    const int room = options_.steps_in_flight - static_cast<int>(launched.size());
    const auto can_launch = [&] { return !to_compute_.empty() && room > 0; };
    // With room for another launch, a batch the loop is preparing, or about to cut from the
    // queue, is launched before the oldest is waited for: waiting first would leave the device
    // idle once the oldest finishes.
    const auto launch_coming = [&] {
      const int preparing = in_flight_ - static_cast<int>(to_compute_.size() + launched.size());
      return room > 0 && (preparing > 0 || (!queue_.empty() && in_flight_ < options_.steps_in_flight));
    };
    wake_compute_.wait(lock, [&] { return can_launch() || stopping_ || (!launched.empty() && !launch_coming()); });
    if (can_launch()) {
      std::unique_ptr<Batch> batch = std::move(to_compute_.front());
      to_compute_.pop_front();
      lock.unlock();
      Launch(*batch);
      batch->record.steps_in_flight = static_cast<int>(launched.size()) + 1;
      if (metrics_) metrics_->steps_in_flight.Set(batch->record.steps_in_flight);
      launched.push_back(std::move(batch));
      lock.lock();
      continue;
    }
    if (launched.empty()) return;  // stopping, nothing left
    std::unique_ptr<Batch> batch = std::move(launched.front());
    launched.pop_front();
    lock.unlock();
    const Clock::time_point wait_start = Clock::now();
    if (batch->result.ok()) {
      Status ready = batch->result->Wait();
      if (!ready.ok()) batch->result = ready;
    }
    if (metrics_) metrics_->steps_in_flight.Set(static_cast<int64_t>(launched.size()));
    batch->record.wait_milliseconds = MillisecondsBetween(wait_start, Clock::now());
    batch->record.compute_milliseconds = MillisecondsBetween(batch->launch_time, Clock::now());
    lock.lock();
    computed_.push_back(std::move(batch));
    --in_flight_;
    wake_loop_.notify_one();
  }
}

void Scheduler::Launch(Batch& batch) {
  batch.launch_time = Clock::now();
  engine::Batch engine_batch{batch.token_ids, batch.cu_seqlens, batch.token_type_ids};
  engine_batch.key_lengths = batch.key_lengths;
  engine_batch.adapters = batch.adapters;
  engine::StepOptions step_options;
  switch (batch.key.kind) {
    case WorkKind::kScore: step_options.output = engine::StepOutput::kScores; break;
    case WorkKind::kTokenEmbed: step_options.output = engine::StepOutput::kTokenEmbeddings; break;
    case WorkKind::kDenseSparseColbert: step_options.output = engine::StepOutput::kDenseSparseColbert; break;
    case WorkKind::kTokenVectors:
    case WorkKind::kMaxSim: step_options.output = engine::StepOutput::kTokenVectors; break;
    case WorkKind::kEmbed:
      step_options.pooling = batch.key.pooling;  // rows whole: each request finishes its own
      step_options.spans = batch.spans;
      break;
  }
  batch.result = step_(engine_batch, step_options);
  batch.record.launch_milliseconds = MillisecondsBetween(batch.launch_time, Clock::now());
}

void Scheduler::LoopThread() {
  std::unique_lock lock(mutex_);
  while (true) {
    std::vector<std::shared_ptr<WorkRequest>> purged = PurgeLocked();
    std::deque<std::unique_ptr<Batch>> finished = std::move(computed_);
    computed_.clear();
    std::unique_ptr<Batch> next;
    if (in_flight_ < options_.steps_in_flight && !queue_.empty()) {
      next = CutLocked();
      ++in_flight_;
    }
    if (finished.empty() && !next && purged.empty()) {
      if (stopping_ && queue_.empty() && in_flight_ == 0) return;
      // Wakes on Submit, Cancel and a computed batch; the timeout expires queued deadlines.
      wake_loop_.wait_for(lock, std::chrono::milliseconds(50));
      continue;
    }
    lock.unlock();

    // Dispatch the next batch before scattering the previous one: the engine computes while
    // this thread copies results out and answers requests.
    if (next) {
      Prepare(*next);
      std::lock_guard compute_lock(mutex_);
      to_compute_.push_back(std::move(next));
    }
    // Also when nothing was cut: the compute thread may be holding off its wait for a launch.
    wake_compute_.notify_one();
    for (const auto& batch : finished) Scatter(*batch);
    for (const auto& request : purged) FinishIfDone(request);

    lock.lock();
  }
}

void Scheduler::Scatter(Batch& batch) {
  const Clock::time_point start = Clock::now();
  const bool ok = batch.result.ok();
  // The engine's message as it is: whoever answers the client (the gateway's DispatchError)
  // says that inference failed.
  const Status failure = ok ? Status() : Status::Error(StatusCode::kError, batch.result.status().message());
  for (const Batch::Slice& slice : batch.slices) {
    WorkRequest& request = *slice.request;
    --request.batches_in_flight;
    request.timing.compute_microseconds += static_cast<uint64_t>(batch.record.compute_milliseconds * 1000);
    if (!ok) {
      if (request.status.ok()) request.status = failure;
      continue;
    }
    if (!request.status.ok()) continue;  // cancelled or expired meanwhile: drop the rows
    if (request.kind == WorkKind::kTokenVectors || request.kind == WorkKind::kMaxSim) {
      ScatterTokenVectors(*batch.result, slice.first_token, slice.first_sequence, slice.sequences, request);
      request.sequences_done += slice.sequences;
      continue;
    }
    // The request's own `dimensions` and normalisation, into its output. Host F32 rows never
    // fail; if they did, the request fails rather than answer wrong.
    float* output = reinterpret_cast<float*>(request.output.data());
    const Status finished = engine::FinishRows(*batch.result, slice.first_row, slice.rows, request.columns,
                                               request.kind == WorkKind::kEmbed && request.normalize,
                                               output + request.row_offsets[slice.first_sequence] * request.columns);
    if (!finished.ok()) request.status = finished;
    request.sequences_done += slice.sequences;
  }
  batch.record.scatter_milliseconds = MillisecondsBetween(start, Clock::now());

  if (metrics_) {
    metrics_->batch_tokens.Observe(static_cast<double>(batch.record.tokens));
    metrics_->batch_sequences.Observe(batch.record.sequences);
    metrics_->compute_seconds.Observe(batch.record.compute_milliseconds * 1e-3);
    metrics_->sequences.Increment(batch.record.sequences);
    metrics_->tokens.Increment(batch.record.tokens);
  }
  const BatchRecord& record = batch.record;
  if (spdlog::should_log(spdlog::level::debug)) {
    std::string per_request;
    for (int sequences : record.sequences_per_request) per_request += (per_request.empty() ? "" : "/") + std::to_string(sequences);
    spdlog::debug("batch {}: {} requests, {} sequences ({} per request; high {}, normal {}, low {}), {} of {} tokens | "
                  "queued {:.2f} ms | prepared {:.3f} ms | {} in flight, computed {:.2f} ms (launch {:.2f}, wait {:.2f}) | "
                  "scattered {:.3f} ms while the next batch computed",
                  record.index, record.requests, record.sequences, per_request, record.sequences_by_priority[0],
                  record.sequences_by_priority[1], record.sequences_by_priority[2], record.tokens, record.token_budget,
                  record.queue_milliseconds, record.prepare_milliseconds, record.steps_in_flight, record.compute_milliseconds,
                  record.launch_milliseconds, record.wait_milliseconds, record.scatter_milliseconds);
  }
  if (!ok) spdlog::error("batch {} failed: {}", record.index, batch.result.status().message());
  {
    std::lock_guard lock(records_mutex_);
    records_.push_back(record);
    if (records_.size() > kMaxRecords) records_.pop_front();
  }
  for (const Batch::Slice& slice : batch.slices) {
    // A failed request with sequences still queued is finished by PurgeLocked, which drops them.
    const bool still_queued = slice.request->next_sequence < slice.request->lengths.size();
    if (slice.request->status.ok() || !still_queued) FinishIfDone(slice.request);
  }
}

void Scheduler::FinishIfDone(const std::shared_ptr<WorkRequest>& request) {
  if (request->finished || request->batches_in_flight > 0) return;
  const bool all_done = request->sequences_done == request->lengths.size();
  if (request->status.ok() && !all_done) return;
  request->finished = true;
  if (!request->status.ok()) request->output.clear();
  CountFinished(*request);
  if (request->on_done) request->on_done(*request);
  std::lock_guard lock(mutex_);
  if (--unfinished_requests_ == 0) drained_.notify_all();
}

void Scheduler::CountFinished(const WorkRequest& request) {
  if (!metrics_) return;
  switch (request.status.code()) {
    case StatusCode::kOk: metrics_->requests_ok.Increment(); break;
    case StatusCode::kCancelled: metrics_->requests_cancelled.Increment(); break;
    case StatusCode::kDeadlineExceeded: metrics_->requests_expired.Increment(); break;
    default: metrics_->requests_failed.Increment(); break;
  }
}

}  // namespace stamen::server
