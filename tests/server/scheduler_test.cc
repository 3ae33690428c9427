// The scheduler in process, with the engine of a tiny random model behind a gate that holds
// the first batch: what is queued meanwhile shows how batches are cut (asserted on the
// scheduler's batch records, not on timing).
#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/server/test_models.h"

namespace stamen::server {
namespace {

using testing::ComputeAlone;
using testing::Pack;
using testing::RandomSequences;
using testing::UnpackFloats;

// Holds every step until Open(); counts the steps that reached it.
class Gate {
 public:
  void Pass() {
    std::unique_lock lock(mutex_);
    ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
  }
  void WaitEntered(int steps) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return entered_ >= steps; });
  }
  void Open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int entered_ = 0;
  bool open_ = false;
};

// Waits for requests' on_done.
class Completions {
 public:
  std::function<void(WorkRequest&)> Callback() {
    return [this](WorkRequest&) {
      std::lock_guard lock(mutex_);
      ++done_;
      changed_.notify_all();
    };
  }
  bool WaitFor(int count, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return done_ >= count; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int done_ = 0;
};

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = engine::Engine::Load(testing::TinyEmbedder(), {.num_threads = 1});
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    engine_ = std::move(loaded.value()).release();
  }
  static void TearDownTestSuite() { delete engine_; }

  void Start(SchedulerOptions options) {
    scheduler_ = std::make_unique<Scheduler>(
        [this](const engine::Batch& batch, const engine::StepOptions& step) {
          gate_.Pass();
          return engine_->Step(batch, step);
        },
        ModelLimits::Of(*engine_), options, &metrics_);
  }

  std::shared_ptr<WorkRequest> Request(const std::vector<std::vector<int32_t>>& sequences) {
    auto request = std::make_shared<WorkRequest>();
    std::vector<int32_t> ids;
    for (const auto& sequence : sequences) {
      ids.insert(ids.end(), sequence.begin(), sequence.end());
      request->lengths.push_back(static_cast<int32_t>(sequence.size()));
    }
    request->token_ids = Pack(ids);
    request->on_done = completions_.Callback();
    return request;
  }

  // Every row of `request` equals the sequence embedded alone (normalised, all dimensions).
  void ExpectMatchesAlone(const WorkRequest& request, const std::vector<std::vector<int32_t>>& sequences) {
    ASSERT_TRUE(request.status.ok()) << request.status.message();
    const std::vector<std::vector<float>> alone = ComputeAlone(*engine_, sequences, {});
    const std::vector<float> values = UnpackFloats(request.output);
    ASSERT_EQ(values.size(), sequences.size() * request.columns);
    for (size_t row = 0; row < sequences.size(); ++row) {
      for (int64_t column = 0; column < request.columns; ++column) {
        ASSERT_NEAR(values[row * request.columns + column], alone[row][column], 1e-5) << "row " << row;
      }
    }
  }

  static engine::Engine* engine_;
  metrics::Registry registry_;
  SchedulerMetrics metrics_{registry_};
  Gate gate_;
  Completions completions_;
  std::unique_ptr<Scheduler> scheduler_;
  std::mt19937 random_{42};
};

engine::Engine* SchedulerTest::engine_ = nullptr;

TEST_F(SchedulerTest, RequestsQueuedWhileTheEngineIsBusyMergeUpToTheTokenBudget) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 8, .max_queued_tokens = 4096});
  const auto a = RandomSequences(random_, {10});
  auto request_a = Request(a);
  ASSERT_TRUE(scheduler_->Submit(request_a).ok());
  gate_.WaitEntered(1);  // A computes; everything below waits in the queue

  const auto b = RandomSequences(random_, {20});
  const auto c = RandomSequences(random_, {20, 10});
  const auto d = RandomSequences(random_, {30});
  const auto e = RandomSequences(random_, {5});
  std::vector<std::shared_ptr<WorkRequest>> later = {Request(b), Request(c), Request(d), Request(e)};
  for (auto& request : later) ASSERT_TRUE(scheduler_->Submit(request).ok());
  EXPECT_EQ(scheduler_->queue_depth().sequences, 5);
  EXPECT_EQ(scheduler_->queue_depth().tokens, 85);
  gate_.Open();
  ASSERT_TRUE(completions_.WaitFor(5));

  const std::vector<BatchRecord> batches = scheduler_->RecentBatches();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].requests, 1);
  EXPECT_EQ(batches[0].tokens, 10);
  // B and C fill 50 of 64 tokens; D (30) would exceed the budget and waits, first in line.
  EXPECT_EQ(batches[1].requests, 2);
  EXPECT_EQ(batches[1].sequences, 3);
  EXPECT_EQ(batches[1].tokens, 50);
  EXPECT_EQ(batches[2].requests, 2);
  EXPECT_EQ(batches[2].sequences, 2);
  EXPECT_EQ(batches[2].tokens, 35);
  ExpectMatchesAlone(*request_a, a);
  ExpectMatchesAlone(*later[0], b);
  ExpectMatchesAlone(*later[1], c);
  ExpectMatchesAlone(*later[2], d);
  ExpectMatchesAlone(*later[3], e);
  EXPECT_EQ(request_a->timing.batches, 1u);
  EXPECT_EQ(metrics_.requests_ok.value(), 5u);
}

TEST_F(SchedulerTest, ARequestSpreadsOverSeveralBatchesAndComesBackInOrder) {
  gate_.Open();
  Start({.max_batch_tokens = 64, .max_batch_sequences = 8, .max_queued_tokens = 4096});
  const auto sequences = RandomSequences(random_, {20, 20, 20, 20, 20, 20, 20, 20, 20, 7});
  auto request = Request(sequences);
  ASSERT_TRUE(scheduler_->Submit(request).ok());
  ASSERT_TRUE(completions_.WaitFor(1));
  const std::vector<BatchRecord> batches = scheduler_->RecentBatches();
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].sequences, 3);
  EXPECT_EQ(batches[3].sequences, 1);
  EXPECT_EQ(request->timing.batches, 4u);
  ExpectMatchesAlone(*request, sequences);
}

TEST_F(SchedulerTest, TheSequenceCapCutsBatchesToo) {
  gate_.Open();
  Start({.max_batch_tokens = 4096, .max_batch_sequences = 4, .max_queued_tokens = 4096});
  const auto sequences = RandomSequences(random_, {3, 3, 3, 3, 3, 3, 3, 3, 3});
  auto request = Request(sequences);
  ASSERT_TRUE(scheduler_->Submit(request).ok());
  ASSERT_TRUE(completions_.WaitFor(1));
  const std::vector<BatchRecord> batches = scheduler_->RecentBatches();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].sequences, 4);
  EXPECT_EQ(batches[2].sequences, 1);
  ExpectMatchesAlone(*request, sequences);
}

TEST_F(SchedulerTest, DimensionsAndNormalizeArePerRequest) {
  gate_.Open();
  Start({.max_batch_tokens = 4096, .max_batch_sequences = 64, .max_queued_tokens = 4096});
  const auto sequences = RandomSequences(random_, {12, 30});
  auto truncated = Request(sequences);
  truncated->dimensions = 64;
  auto raw = Request(sequences);
  raw->normalize = false;
  ASSERT_TRUE(scheduler_->Submit(truncated).ok());
  ASSERT_TRUE(scheduler_->Submit(raw).ok());
  ASSERT_TRUE(completions_.WaitFor(2));
  ASSERT_EQ(truncated->columns, 64);
  const auto expected_truncated = ComputeAlone(*engine_, sequences, {.dimensions = 64});
  const auto expected_raw = ComputeAlone(*engine_, sequences, {.normalize = false});
  const std::vector<float> truncated_values = UnpackFloats(truncated->output);
  const std::vector<float> raw_values = UnpackFloats(raw->output);
  for (size_t row = 0; row < sequences.size(); ++row) {
    for (int column = 0; column < 64; ++column) {
      EXPECT_NEAR(truncated_values[row * 64 + column], expected_truncated[row][column], 1e-5);
    }
    for (int64_t column = 0; column < raw->columns; ++column) {
      EXPECT_NEAR(raw_values[row * raw->columns + column], expected_raw[row][column], 1e-4);
    }
  }
}

TEST_F(SchedulerTest, CancellationDropsQueuedSequencesBeforeTheyAreComputed) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 8, .max_queued_tokens = 4096});
  auto first = Request(RandomSequences(random_, {10}));
  ASSERT_TRUE(scheduler_->Submit(first).ok());
  gate_.WaitEntered(1);
  auto cancelled = Request(RandomSequences(random_, {20, 20, 20}));
  ASSERT_TRUE(scheduler_->Submit(cancelled).ok());
  scheduler_->Cancel(*cancelled);
  // Finished while the engine is still busy with the first batch.
  ASSERT_TRUE(completions_.WaitFor(1));
  EXPECT_EQ(cancelled->status.code(), StatusCode::kCancelled);
  EXPECT_EQ(scheduler_->queue_depth().tokens, 0);
  gate_.Open();
  ASSERT_TRUE(completions_.WaitFor(2));
  EXPECT_TRUE(first->status.ok());
  EXPECT_EQ(scheduler_->RecentBatches().size(), 1u);
  EXPECT_EQ(metrics_.dropped_sequences.value(), 3u);
  EXPECT_EQ(metrics_.requests_cancelled.value(), 1u);
}

TEST_F(SchedulerTest, AnExpiredDeadlineDropsTheRequest) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 8, .max_queued_tokens = 4096});
  auto first = Request(RandomSequences(random_, {10}));
  ASSERT_TRUE(scheduler_->Submit(first).ok());
  gate_.WaitEntered(1);
  auto late = Request(RandomSequences(random_, {20}));
  late->deadline = Clock::now() + std::chrono::milliseconds(20);
  ASSERT_TRUE(scheduler_->Submit(late).ok());
  ASSERT_TRUE(completions_.WaitFor(1, std::chrono::seconds(5)));
  EXPECT_EQ(late->status.code(), StatusCode::kDeadlineExceeded);
  gate_.Open();
  ASSERT_TRUE(completions_.WaitFor(2));
  EXPECT_EQ(scheduler_->RecentBatches().size(), 1u);
  EXPECT_EQ(metrics_.requests_expired.value(), 1u);
}

TEST_F(SchedulerTest, AFullQueueRefusesOnlyWhatDoesNotFit) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 8, .max_queued_tokens = 50});
  auto first = Request(RandomSequences(random_, {10}));
  ASSERT_TRUE(scheduler_->Submit(first).ok());
  gate_.WaitEntered(1);
  auto fits = Request(RandomSequences(random_, {40}));
  ASSERT_TRUE(scheduler_->Submit(fits).ok());
  auto too_many = Request(RandomSequences(random_, {20}));
  const Status refused = scheduler_->Submit(too_many);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("queue full"), std::string::npos) << refused.message();
  auto small = Request(RandomSequences(random_, {10}));
  ASSERT_TRUE(scheduler_->Submit(small).ok());
  gate_.Open();
  ASSERT_TRUE(completions_.WaitFor(3));
  EXPECT_TRUE(fits->status.ok());
  EXPECT_TRUE(small->status.ok());
  EXPECT_EQ(metrics_.requests_rejected.value(), 1u);
}

TEST_F(SchedulerTest, BadRequestsFailAloneWithAMessage) {
  gate_.Open();
  Start({.max_batch_tokens = 4096, .max_batch_sequences = 64, .max_queued_tokens = 1 << 20});
  struct Case {
    std::string name;
    std::function<void(WorkRequest&)> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"id out of range", [](WorkRequest& r) { r.token_ids = Pack({5, 1000, 7}); r.lengths = {3}; },
       "token id 1000 at position 1 of sequence 0 is outside the vocabulary"},
      {"negative id", [](WorkRequest& r) { r.token_ids = Pack({-1}); r.lengths = {1}; }, "token id -1"},
      {"empty sequence", [](WorkRequest& r) { r.token_ids = Pack({5, 6}); r.lengths = {2, 0}; },
       "sequence 1 is empty"},
      {"no sequences", [](WorkRequest& r) { r.token_ids.clear(); r.lengths.clear(); }, "no sequences"},
      {"too long", [](WorkRequest& r) { r.token_ids = Pack(std::vector<int32_t>(257, 5)); r.lengths = {257}; },
       "has 257 tokens; the model takes at most 256"},
      {"lengths beyond ids", [](WorkRequest& r) { r.token_ids = Pack({5, 6}); r.lengths = {3}; },
       "add up to more than the 2 token ids"},
      {"ids beyond lengths", [](WorkRequest& r) { r.token_ids = Pack({5, 6, 7}); r.lengths = {2}; },
       "add up to 2 but 3 token ids"},
      {"dimensions", [](WorkRequest& r) { r.dimensions = 385; }, "dimensions 385 outside 1..384"},
      {"type ids", [](WorkRequest& r) { r.token_type_ids = Pack({0}); }, "token type ids: 1 values for"},
      {"score on an embedder", [](WorkRequest& r) { r.kind = WorkKind::kScore; }, "no classification head"},
  };
  for (const Case& bad : cases) {
    auto request = Request(RandomSequences(random_, {4}));
    bad.spoil(*request);
    const Status status = scheduler_->Submit(request);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad.name;
    EXPECT_NE(status.message().find(bad.message), std::string::npos) << bad.name << ": " << status.message();
  }
  const auto good = RandomSequences(random_, {4});
  auto request = Request(good);
  ASSERT_TRUE(scheduler_->Submit(request).ok());
  ASSERT_TRUE(completions_.WaitFor(1));
  ExpectMatchesAlone(*request, good);
  EXPECT_EQ(metrics_.requests_invalid.value(), cases.size());
}

TEST_F(SchedulerTest, DrainFinishesAcceptedWorkAndRefusesNewWork) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 8, .max_queued_tokens = 4096});
  std::vector<std::shared_ptr<WorkRequest>> accepted;
  for (int i = 0; i < 6; ++i) {
    accepted.push_back(Request(RandomSequences(random_, {30, 30})));
    ASSERT_TRUE(scheduler_->Submit(accepted.back()).ok());
  }
  gate_.WaitEntered(1);
  std::thread drain([this] { scheduler_->Drain(); });
  while (!scheduler_->draining()) std::this_thread::yield();
  auto refused = Request(RandomSequences(random_, {5}));
  EXPECT_EQ(scheduler_->Submit(refused).code(), StatusCode::kUnavailable);
  gate_.Open();
  drain.join();
  for (const auto& request : accepted) EXPECT_TRUE(request->status.ok()) << request->status.message();
}

TEST(SchedulerMetricsTest, RenderedInPrometheusTextFormat) {
  metrics::Registry registry;
  SchedulerMetrics metrics(registry);
  metrics.batch_tokens.Observe(100);
  metrics.requests_ok.Increment(3);
  const std::string text = registry.Render();
  EXPECT_NE(text.find("# TYPE stamen_batch_tokens histogram"), std::string::npos);
  EXPECT_NE(text.find("stamen_batch_tokens_bucket{le=\"128\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("stamen_batch_tokens_bucket{le=\"64\"} 0"), std::string::npos);
  EXPECT_NE(text.find("stamen_batch_tokens_count 1"), std::string::npos);
  EXPECT_NE(text.find("stamen_worker_requests_total{status=\"ok\"} 3"), std::string::npos);
  // One HELP/TYPE per name, even with several label sets.
  EXPECT_EQ(text.find("# TYPE stamen_worker_requests_total"), text.rfind("# TYPE stamen_worker_requests_total"));
}

}  // namespace
}  // namespace stamen::server
