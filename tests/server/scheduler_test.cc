// The scheduler in process, with the engine of a tiny random model behind a gate that holds
// the first batch: what is queued meanwhile shows how batches are cut (asserted on the
// scheduler's batch records, not on timing).
#include "server/device_metrics.h"
#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/weight_store.h"
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

  struct BulkAndQuery {
    std::vector<std::vector<int32_t>> bulk_sequences, query_sequences;
    std::shared_ptr<WorkRequest> bulk, query;
  };
  // While the engine computes a first 10-token request, a bulk request of 12 × 10 tokens and
  // then a 10-token query arrive; returns once all three are done.
  void RunBulkThenQueryBehindABusyEngine(BulkAndQuery& run) {
    ASSERT_TRUE(scheduler_->Submit(Request(RandomSequences(random_, {10}))).ok());
    gate_.WaitEntered(1);
    run.bulk_sequences = RandomSequences(random_, std::vector<int>(12, 10));
    run.query_sequences = RandomSequences(random_, {10});
    run.bulk = Request(run.bulk_sequences);
    run.query = Request(run.query_sequences);
    ASSERT_TRUE(scheduler_->Submit(run.bulk).ok());
    ASSERT_TRUE(scheduler_->Submit(run.query).ok());
    gate_.Open();
    ASSERT_TRUE(completions_.WaitFor(3));
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
  // Round robin, oldest first: B 20, C's first 20, then D (30) would exceed the budget and is
  // passed over for this batch, E 5 fits, and C's second sequence in the next round: 55 of 64
  // tokens. D opens the next batch.
  EXPECT_EQ(batches[1].requests, 3);
  EXPECT_EQ(batches[1].sequences, 4);
  EXPECT_EQ(batches[1].tokens, 55);
  EXPECT_EQ(batches[1].sequences_per_request, (std::vector<int>{1, 2, 1}));
  EXPECT_EQ(batches[2].requests, 1);
  EXPECT_EQ(batches[2].sequences, 1);
  EXPECT_EQ(batches[2].tokens, 30);
  ExpectMatchesAlone(*request_a, a);
  ExpectMatchesAlone(*later[0], b);
  ExpectMatchesAlone(*later[1], c);
  ExpectMatchesAlone(*later[2], d);
  ExpectMatchesAlone(*later[3], e);
  EXPECT_EQ(request_a->timing.batches, 1u);
  EXPECT_EQ(metrics_.requests_ok.value(), 5u);
}

// A query queued behind a bulk request joins the next batch: requests take turns.
TEST_F(SchedulerTest, RequestsTakeTurnsNotSequences) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 16, .max_queued_tokens = 4096});
  BulkAndQuery run;
  ASSERT_NO_FATAL_FAILURE(RunBulkThenQueryBehindABusyEngine(run));
  const auto& [bulk_sequences, query_sequences, bulk, query] = run;
  const std::vector<BatchRecord> batches = scheduler_->RecentBatches();
  ASSERT_EQ(batches.size(), 4u);
  // Round robin: bulk, query, bulk, bulk, … up to 64 tokens. First come, first served would
  // have put the query behind all 120 of the bulk request's tokens, in the last batch.
  EXPECT_EQ(batches[1].sequences_per_request, (std::vector<int>{5, 1}));
  EXPECT_EQ(batches[1].tokens, 60);
  EXPECT_EQ(batches[2].sequences_per_request, (std::vector<int>{6}));
  EXPECT_EQ(batches[3].sequences_per_request, (std::vector<int>{1}));
  EXPECT_EQ(query->timing.batches, 1u);
  ExpectMatchesAlone(*bulk, bulk_sequences);  // its order is kept across batches
  ExpectMatchesAlone(*query, query_sequences);
}

// A query arriving behind bulk work runs in a batch cut at query_batch_tokens; batches of bulk
// work alone stay full.
TEST_F(SchedulerTest, AQueryBesideBulkWorkCutsItsBatchShort) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 16, .max_queued_tokens = 4096, .query_batch_tokens = 32});
  BulkAndQuery run;
  ASSERT_NO_FATAL_FAILURE(RunBulkThenQueryBehindABusyEngine(run));
  const auto& [bulk_sequences, query_sequences, bulk, query] = run;
  const std::vector<BatchRecord> batches = scheduler_->RecentBatches();
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].token_budget, 64);  // the first request alone: nothing to share with
  // Bulk, bulk, query: 30 tokens, and a third bulk sequence would pass the 32.
  EXPECT_EQ(batches[1].token_budget, 32);
  EXPECT_EQ(batches[1].sequences_per_request, (std::vector<int>{2, 1}));
  EXPECT_EQ(batches[1].tokens, 30);
  EXPECT_EQ(batches[2].token_budget, 64);
  EXPECT_EQ(batches[2].sequences_per_request, (std::vector<int>{6}));
  EXPECT_EQ(batches[3].sequences_per_request, (std::vector<int>{4}));
  ExpectMatchesAlone(*bulk, bulk_sequences);
  ExpectMatchesAlone(*query, query_sequences);
}

// High first, but every lower class keeps its minimum share (an eighth of the budget).
TEST_F(SchedulerTest, HighPriorityGoesFirstAndLowerClassesKeepAShare) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 16, .max_queued_tokens = 4096});
  ASSERT_TRUE(scheduler_->Submit(Request(RandomSequences(random_, {10}))).ok());
  gate_.WaitEntered(1);
  const auto low_sequences = RandomSequences(random_, std::vector<int>(12, 8));
  const auto normal_sequences = RandomSequences(random_, std::vector<int>(4, 8));
  const auto high_sequences = RandomSequences(random_, std::vector<int>(8, 8));
  auto low = Request(low_sequences);
  low->priority = Priority::kLow;
  auto normal = Request(normal_sequences);
  auto high = Request(high_sequences);
  high->priority = Priority::kHigh;
  for (const auto& request : {low, normal, high}) ASSERT_TRUE(scheduler_->Submit(request).ok());
  gate_.Open();
  ASSERT_TRUE(completions_.WaitFor(4));
  const std::vector<BatchRecord> batches = scheduler_->RecentBatches();
  ASSERT_GE(batches.size(), 3u);
  // 64 tokens: normal and low 8 each (their share), high the other 48.
  EXPECT_EQ(std::vector<int>(batches[1].sequences_by_priority, batches[1].sequences_by_priority + kPriorities),
            (std::vector<int>{6, 1, 1}));
  // High's last 2, the shares, then normal fills before low.
  EXPECT_EQ(std::vector<int>(batches[2].sequences_by_priority, batches[2].sequences_by_priority + kPriorities),
            (std::vector<int>{2, 3, 3}));
  EXPECT_EQ(high->timing.batches, 2u);
  ExpectMatchesAlone(*low, low_sequences);
  ExpectMatchesAlone(*normal, normal_sequences);
  ExpectMatchesAlone(*high, high_sequences);
  EXPECT_NE(registry_.Render().find("stamen_queue_seconds_count{priority=\"high\"} 1"), std::string::npos);
}

// Under constant high-priority load a low-priority request still gets a sequence into every
// batch, and finishes long before the high-priority work does.
TEST_F(SchedulerTest, ALowPriorityRequestFinishesUnderConstantHighPriorityLoad) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 16, .max_queued_tokens = 1 << 16});
  ASSERT_TRUE(scheduler_->Submit(Request(RandomSequences(random_, {10}))).ok());
  gate_.WaitEntered(1);
  auto low = Request(RandomSequences(random_, std::vector<int>(10, 8)));
  low->priority = Priority::kLow;
  ASSERT_TRUE(scheduler_->Submit(low).ok());
  for (int i = 0; i < 30; ++i) {  // each one fills a batch alone
    auto high = Request(RandomSequences(random_, std::vector<int>(8, 8)));
    high->priority = Priority::kHigh;
    ASSERT_TRUE(scheduler_->Submit(high).ok());
  }
  gate_.Open();
  ASSERT_TRUE(completions_.WaitFor(32));
  EXPECT_TRUE(low->status.ok());
  // One sequence a batch (two in the batch the oldest request opens): done in 9 of the 30+.
  EXPECT_EQ(low->timing.batches, 9u);
  const std::vector<BatchRecord> batches = scheduler_->RecentBatches();
  for (size_t i = 1; i <= low->timing.batches; ++i) EXPECT_GE(batches[i].sequences_by_priority[2], 1) << "batch " << i;
}

// A request no batch of the busier work can take (another step kind) still runs: every
// kOldestLeadsEvery-th batch is opened by the oldest request waiting.
TEST_F(SchedulerTest, TheOldestRequestOpensEveryEighthBatch) {
  Start({.max_batch_tokens = 64, .max_batch_sequences = 16, .max_queued_tokens = 1 << 16});
  ASSERT_TRUE(scheduler_->Submit(Request(RandomSequences(random_, {10}))).ok());
  gate_.WaitEntered(1);
  auto other_kind = Request(RandomSequences(random_, {12}));
  other_kind->pooling = engine::ops::PoolingMode::kCls;  // cannot share a mean-pooling step
  ASSERT_TRUE(scheduler_->Submit(other_kind).ok());
  for (int i = 0; i < 20; ++i) {
    auto high = Request(RandomSequences(random_, std::vector<int>(8, 8)));
    high->priority = Priority::kHigh;
    ASSERT_TRUE(scheduler_->Submit(high).ok());
  }
  gate_.Open();
  ASSERT_TRUE(completions_.WaitFor(22));
  const std::vector<BatchRecord> batches = scheduler_->RecentBatches();
  ASSERT_GT(batches.size(), 8u);
  // Batches 1 … 6 are the high-priority work's; batch 7 is the oldest request's, alone.
  for (size_t i = 1; i <= 6; ++i) EXPECT_EQ(batches[i].sequences_by_priority[0], 8) << "batch " << i;
  EXPECT_EQ(batches[7].tokens, 12);
  EXPECT_EQ(batches[7].sequences_by_priority[1], 1);
  EXPECT_TRUE(other_kind->status.ok());
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
  const auto expected_truncated = ComputeAlone(*engine_, sequences, {}, 64);
  const auto expected_raw = ComputeAlone(*engine_, sequences, {}, 0, false);
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
      {"adapter without adapters", [](WorkRequest& r) { r.adapter = 0; }, "adapter 0 is not one of the model's 0 task adapters"},
      {"negative adapter", [](WorkRequest& r) { r.adapter = -2; }, "adapter must be -1 (none) or the index"},
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

// Requests naming different task adapters (jina-embeddings-v3) share one batch, each sequence
// with its request's adapter: every answer is transformers' golden for its task
// (tests/engine/data/tiny-jina-v3-hub-bf16, tools/make_jina_v3_goldens.py), and the batch that
// held all three passed the engine one adapter per sequence.
TEST(SchedulerTaskAdaptersTest, RequestsOfDifferentTasksShareABatchEachWithItsAdapter) {
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-jina-v3-hub-bf16/";
  auto engine = engine::Engine::Load(folder, {.num_threads = 1, .compute_dtype = engine::DataType::kF32});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto golden = engine::WeightStore::OpenFile(folder + "golden.safetensors");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  auto ids = golden->Load("input_ids_3", engine::DataType::kI64);
  ASSERT_TRUE(ids.ok());
  const std::vector<int32_t> sequence(ids->data<int64_t>(), ids->data<int64_t>() + ids->NumElements());
  Gate gate;
  std::mutex mutex;
  std::vector<std::vector<int32_t>> batch_adapters;
  Scheduler scheduler(
      [&](const engine::Batch& batch, const engine::StepOptions& step) {
        {
          std::lock_guard lock(mutex);
          batch_adapters.emplace_back(batch.adapters.begin(), batch.adapters.end());
        }
        gate.Pass();
        return (*engine)->Step(batch, step);
      },
      ModelLimits::Of(**engine), {.max_batch_tokens = 4096, .max_batch_sequences = 64, .max_queued_tokens = 4096},
      nullptr);
  ASSERT_EQ(scheduler.limits().task_adapters, 5);
  Completions completions;
  auto request = [&](int32_t adapter) {
    auto work = std::make_shared<WorkRequest>();
    work->token_ids = Pack(sequence);
    work->lengths = {static_cast<int32_t>(sequence.size())};
    work->pooling = engine::ops::PoolingMode::kMean;
    work->normalize = false;
    work->adapter = adapter;
    work->on_done = completions.Callback();
    return work;
  };
  // The first request holds the engine while the three others queue, so they are cut together.
  ASSERT_TRUE(scheduler.Submit(request(-1)).ok());
  gate.WaitEntered(1);
  const std::vector<std::pair<int32_t, std::string>> tasks = {{1, "retrieval.passage"}, {4, "text-matching"}, {-1, "none"}};
  std::vector<std::shared_ptr<WorkRequest>> requests;
  for (const auto& [adapter, name] : tasks) {
    requests.push_back(request(adapter));
    ASSERT_TRUE(scheduler.Submit(requests.back()).ok());
  }
  gate.Open();
  ASSERT_TRUE(completions.WaitFor(4));
  for (size_t k = 0; k < tasks.size(); ++k) {
    ASSERT_TRUE(requests[k]->status.ok()) << requests[k]->status.message();
    auto expected = golden->Load("mean_pooled_" + tasks[k].second + "_3");
    ASSERT_TRUE(expected.ok());
    const std::vector<float> actual = UnpackFloats(requests[k]->output);
    ASSERT_EQ(actual.size(), static_cast<size_t>(expected->NumElements()));
    for (size_t j = 0; j < actual.size(); ++j) EXPECT_NEAR(actual[j], expected->data<float>()[j], 1e-4) << tasks[k].second;
  }
  ASSERT_EQ(batch_adapters.size(), 2u);
  EXPECT_TRUE(batch_adapters[0].empty());  // no request named an adapter: the engine gets none
  EXPECT_EQ(batch_adapters[1], (std::vector<int32_t>{1, 4, -1}));
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

// --- two steps in flight (a device whose Step only enqueues) ---

// A test double of a GPU engine: Step computes the real values on the CPU engine at once but
// hands them back as a LazyResult whose Wait blocks until the test lets that step finish, as a
// device's event would; steps can be told to fail at launch or on the device.
class FakeDevice {
 public:
  explicit FakeDevice(engine::Engine& engine) : engine_(engine) {}

  StatusOr<engine::LazyResult> Step(const engine::Batch& batch, const engine::StepOptions& options) {
    int index;
    {
      std::lock_guard lock(mutex_);
      index = launched_++;
      events_.push_back("launch " + std::to_string(index));
      changed_.notify_all();
      if (fail_launch_ == index) return Status::Error("launch failed on the fake device");
    }
    auto computed = engine_.Step(batch, options);
    if (!computed.ok()) return computed.status();
    if (Status ready = computed->Wait(); !ready.ok()) return ready;
    const engine::Tensor& values = computed->values();
    const int64_t dims[] = {values.dim(0), values.dim(1)};
    auto copy = engine::Tensor::Allocate(engine::DataType::kF32, engine::Shape::FromDims(dims).value());
    if (!copy.ok()) return copy.status();
    std::memcpy(copy->raw_data(), values.raw_data(), values.NumBytes());
    return engine::LazyResult::Deferred(std::move(copy.value()), [this, index] {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return finished_ > index; });
      events_.push_back("waited " + std::to_string(index));
      if (fail_on_device_ == index) return Status::Error("the fake device failed step " + std::to_string(index));
      return Status();
    });
  }
  // Lets steps up to `index` finish on the device.
  void FinishThrough(int index) {
    std::lock_guard lock(mutex_);
    finished_ = std::max(finished_, index + 1);
    changed_.notify_all();
  }
  bool WaitLaunched(int steps, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return launched_ >= steps; });
  }
  std::vector<std::string> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }
  int fail_launch_ = -1;
  int fail_on_device_ = -1;

 private:
  engine::Engine& engine_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int launched_ = 0;
  int finished_ = 0;
  std::vector<std::string> events_;
};

class TwoStepsInFlightTest : public SchedulerTest {
 protected:
  void StartOnDevice(FakeDevice& device) {
    scheduler_ = std::make_unique<Scheduler>(
        [&device](const engine::Batch& batch, const engine::StepOptions& step) { return device.Step(batch, step); },
        ModelLimits::Of(*engine_),
        SchedulerOptions{.max_batch_tokens = 64, .max_batch_sequences = 16, .max_queued_tokens = 4096, .steps_in_flight = 2},
        &metrics_);
  }
};

TEST_F(TwoStepsInFlightTest, TheNextBatchIsLaunchedBeforeTheFirstIsWaitedForAndResultsComeBackInOrder) {
  FakeDevice device(*engine_);
  StartOnDevice(device);
  const auto sequences = RandomSequences(random_, std::vector<int>(20, 10));  // batches of 6, 6, 6, 2
  auto request = Request(sequences);
  ASSERT_TRUE(scheduler_->Submit(request).ok());
  // Step 0 has not finished on the device, yet step 1 is launched: two in flight.
  ASSERT_TRUE(device.WaitLaunched(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(device.events(), (std::vector<std::string>{"launch 0", "launch 1"}));  // never three
  device.FinishThrough(0);
  ASSERT_TRUE(device.WaitLaunched(3));  // step 0 waited for, so step 2 goes
  device.FinishThrough(3);
  ASSERT_TRUE(completions_.WaitFor(1));
  EXPECT_EQ(device.events(), (std::vector<std::string>{"launch 0", "launch 1", "waited 0", "launch 2", "waited 1",
                                                       "launch 3", "waited 2", "waited 3"}));
  EXPECT_EQ(request->timing.batches, 4u);
  ExpectMatchesAlone(*request, sequences);
  std::vector<int> in_flight;
  for (const BatchRecord& record : scheduler_->RecentBatches()) {
    EXPECT_GE(record.compute_milliseconds, record.wait_milliseconds);
    in_flight.push_back(record.steps_in_flight);
  }
  // Launch 0 alone, then each launch beside the one not yet waited for.
  EXPECT_EQ(in_flight, (std::vector<int>{1, 2, 2, 2}));
  EXPECT_NE(registry_.Render().find("stamen_steps_in_flight 0"), std::string::npos);
}

TEST_F(TwoStepsInFlightTest, AFailedStepFailsOnlyItsRequestsAndNothingIsLost) {
  FakeDevice device(*engine_);
  device.fail_on_device_ = 1;
  device.fail_launch_ = 2;
  StartOnDevice(device);
  device.FinishThrough(100);
  // One request per batch: each fills the 64-token budget alone (submitted while the first
  // batch is already cut, so they do not share batches).
  std::vector<std::shared_ptr<WorkRequest>> requests;
  std::vector<std::vector<std::vector<int32_t>>> inputs;
  for (int i = 0; i < 4; ++i) {
    inputs.push_back(RandomSequences(random_, std::vector<int>(4, 16)));
    requests.push_back(Request(inputs.back()));
    ASSERT_TRUE(scheduler_->Submit(requests.back()).ok());
    ASSERT_TRUE(device.WaitLaunched(i + 1));
  }
  ASSERT_TRUE(completions_.WaitFor(4));
  ExpectMatchesAlone(*requests[0], inputs[0]);
  EXPECT_EQ(requests[1]->status.code(), StatusCode::kError);
  // The engine's message as it is: the gateway adds "inference failed: " once (issue 45 saw it
  // twice).
  EXPECT_EQ(requests[1]->status.message(), "the fake device failed step 1");
  EXPECT_EQ(requests[2]->status.code(), StatusCode::kError);
  EXPECT_EQ(requests[2]->status.message(), "launch failed on the fake device");
  ExpectMatchesAlone(*requests[3], inputs[3]);
  EXPECT_EQ(metrics_.requests_ok.value(), 2u);
  EXPECT_EQ(metrics_.requests_failed.value(), 2u);
}

TEST_F(TwoStepsInFlightTest, CancellationAndDrainHoldWithTwoInFlight) {
  FakeDevice device(*engine_);
  StartOnDevice(device);
  auto cancelled = Request(RandomSequences(random_, std::vector<int>(30, 10)));  // 5 batches' worth
  ASSERT_TRUE(scheduler_->Submit(cancelled).ok());
  ASSERT_TRUE(device.WaitLaunched(2));
  scheduler_->Cancel(*cancelled);
  auto kept = Request(RandomSequences(random_, {10, 10}));
  ASSERT_TRUE(scheduler_->Submit(kept).ok());
  std::thread drain([this] { scheduler_->Drain(); });
  device.FinishThrough(100);
  drain.join();
  EXPECT_EQ(cancelled->status.code(), StatusCode::kCancelled);
  EXPECT_TRUE(kept->status.ok()) << kept->status.message();
  EXPECT_GT(metrics_.dropped_sequences.value(), 0u);  // its sequences not yet launched
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

// What a GPU worker's /metrics shows of the engine's device counters (the values are made up:
// no GPU here; Engine::device_stats() fills them on one).
TEST(DeviceMetricsTest, PublishesTheEnginesDeviceCounters) {
  metrics::Registry registry;
  DeviceMetrics metrics(registry);
  metrics.Publish({.graph_captures = 3, .graph_replays = 40, .eager_runs = 2, .capture_failures = 1, .graphs = 3,
                   .graph_evictions = 0, .graph_bytes = 4096, .capture_seconds = 0.25, .inflection_tokens = 512,
                   .memory_used_bytes = size_t{3} << 30});
  const std::string text = registry.Render();
  EXPECT_NE(text.find("stamen_device_graph_captures 3"), std::string::npos) << text;
  EXPECT_NE(text.find("stamen_device_graph_replays 40"), std::string::npos);
  EXPECT_NE(text.find("stamen_device_eager_runs 2"), std::string::npos);
  EXPECT_NE(text.find("stamen_device_graph_capture_milliseconds 250"), std::string::npos);
  EXPECT_NE(text.find("stamen_device_graph_token_limit 512"), std::string::npos);
  EXPECT_NE(text.find("stamen_device_memory_used_bytes 3221225472"), std::string::npos);
}

}  // namespace
}  // namespace stamen::server
