// The dispatcher with fake workers: chunking by tokens, least-outstanding-tokens spreading,
// results in input order, one retry elsewhere, and DNS names resolved to every address.
#include "gateway/dispatcher.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>

namespace stamen::gateway {
namespace {

using server::WorkRequest;

// A worker that answers each sequence with one float: its first token id. It can hold work
// until released, or fail it.
class FakeBackend final : public WorkerBackend {
 public:
  explicit FakeBackend(std::string address) : address_(std::move(address)) {}
  void Submit(std::shared_ptr<WorkRequest> work) override {
    std::unique_lock lock(mutex_);
    ++submitted;
    if (hold) {
      held_.push_back(std::move(work));
      return;
    }
    lock.unlock();
    Complete(*work);
  }
  void Cancel(WorkRequest&) override {}
  Status CheckHealth(std::chrono::milliseconds) override { return Status(); }
  StatusOr<v1::InfoResponse> FetchInfo(std::chrono::milliseconds) override { return v1::InfoResponse(); }
  const std::string& address() const override { return address_; }

  void Release() {
    std::vector<std::shared_ptr<WorkRequest>> held;
    {
      std::lock_guard lock(mutex_);
      held.swap(held_);
      hold = false;
    }
    for (auto& work : held) Complete(*work);
  }

  bool hold = false;
  StatusCode fail_with = StatusCode::kOk;
  int submitted = 0;

 private:
  void Complete(WorkRequest& work) {
    if (fail_with != StatusCode::kOk) {
      work.status = Status::Error(fail_with, "fake failure");
    } else {
      work.columns = 1;
      work.output.resize(work.lengths.size() * sizeof(float));
      size_t offset = 0;
      for (size_t i = 0; i < work.lengths.size(); ++i) {
        int32_t first;
        std::memcpy(&first, work.token_ids.data() + offset * sizeof(int32_t), sizeof(first));
        const float value = static_cast<float>(first);
        std::memcpy(work.output.data() + i * sizeof(float), &value, sizeof(float));
        offset += work.lengths[i];
      }
      work.timing.batches = 1;
    }
    work.on_done(work);
  }
  std::string address_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<WorkRequest>> held_;
};

// `count` sequences of `length` tokens; sequence i starts with token i.
std::shared_ptr<WorkRequest> Job(int count, int length) {
  auto job = std::make_shared<WorkRequest>();
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) {
    for (int t = 0; t < length; ++t) ids.push_back(t == 0 ? i : 7);
    job->lengths.push_back(length);
  }
  job->token_ids.assign(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int32_t));
  return job;
}

struct Outcome {
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  Status status;
  std::vector<float> values;
  void Wait() {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(10), [this] { return finished; }));
  }
  std::function<void(WorkRequest&)> Callback() {
    return [this](WorkRequest& job) {
      std::lock_guard lock(mutex);
      status = job.status;
      values.resize(job.output.size() / sizeof(float));
      if (!job.output.empty()) std::memcpy(values.data(), job.output.data(), job.output.size());
      finished = true;
      done.notify_all();
    };
  }
};

TEST(DispatcherTest, ChunksGoOutProgressivelyAndComeBackInOrder) {
  metrics::Registry registry;
  Dispatcher dispatcher({.chunk_tokens = 250}, registry);
  std::vector<std::shared_ptr<FakeBackend>> backends;
  for (int i = 0; i < 3; ++i) {
    backends.push_back(std::make_shared<FakeBackend>("fake-" + std::to_string(i)));
    backends.back()->hold = true;
    dispatcher.AddWorker(backends.back());
  }
  Outcome outcome;
  dispatcher.Run(Job(30, 100), outcome.Callback());  // 15 chunks of 2 sequences
  // Two chunks per worker at a time; the rest wait in the gateway, not in the workers' queues.
  for (const auto& backend : backends) EXPECT_EQ(backend->submitted, 2) << backend->address();
  // A request that arrives now reaches a worker at once, beside the bulk one's chunks.
  Outcome query;
  dispatcher.Run(Job(1, 10), query.Callback());
  int submitted = 0;
  for (const auto& backend : backends) submitted += backend->submitted;
  EXPECT_EQ(submitted, 7);
  // Each returning chunk sends the next one.
  for (const auto& backend : backends) backend->Release();
  outcome.Wait();
  query.Wait();
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.message();
  ASSERT_EQ(outcome.values.size(), 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(outcome.values[i], static_cast<float>(i));
  submitted = 0;
  for (const auto& backend : backends) submitted += backend->submitted;
  EXPECT_EQ(submitted, 16);
  EXPECT_NE(registry.Render().find("stamen_gateway_chunks_total 16"), std::string::npos) << registry.Render();
}

TEST(DispatcherTest, ACancelledJobSendsNoMoreChunks) {
  metrics::Registry registry;
  Dispatcher dispatcher({.chunk_tokens = 250}, registry);
  auto backend = std::make_shared<FakeBackend>("fake");
  backend->hold = true;
  dispatcher.AddWorker(backend);
  Outcome outcome;
  auto handle = dispatcher.Run(Job(30, 100), outcome.Callback());  // 15 chunks
  EXPECT_EQ(backend->submitted, 2);
  dispatcher.Cancel(handle);
  backend->Release();  // the two in flight finish; the 13 never sent end without running
  outcome.Wait();
  EXPECT_EQ(outcome.status.code(), StatusCode::kCancelled) << outcome.status.message();
  EXPECT_TRUE(outcome.values.empty());
  EXPECT_EQ(backend->submitted, 2);
}

TEST(DispatcherTest, AFailedChunkIsRetriedOnceElsewhere) {
  metrics::Registry registry;
  Dispatcher dispatcher({.chunk_tokens = 100}, registry);
  auto broken = std::make_shared<FakeBackend>("broken");
  broken->fail_with = StatusCode::kUnavailable;
  auto good = std::make_shared<FakeBackend>("good");
  dispatcher.AddWorker(broken);
  dispatcher.AddWorker(good);
  Outcome outcome;
  dispatcher.Run(Job(6, 100), outcome.Callback());
  outcome.Wait();
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.message();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(outcome.values[i], static_cast<float>(i));
  EXPECT_EQ(good->submitted, 6);  // every chunk ends on the good worker, none twice
  EXPECT_NE(registry.Render().find("stamen_gateway_retries_total 1"), std::string::npos) << registry.Render();
  EXPECT_FALSE(dispatcher.workers()[0]->healthy.load());  // marked down after its failure
}

TEST(DispatcherTest, WithNoOtherWorkerTheFirstErrorStands) {
  metrics::Registry registry;
  Dispatcher dispatcher({}, registry);
  auto full = std::make_shared<FakeBackend>("full");
  full->fail_with = StatusCode::kResourceExhausted;
  dispatcher.AddWorker(full);
  Outcome outcome;
  dispatcher.Run(Job(2, 10), outcome.Callback());
  outcome.Wait();
  EXPECT_EQ(outcome.status.code(), StatusCode::kResourceExhausted);
}

// Load is not a failure: a full queue is not retried on another worker (429 for the client at
// once) and marks no worker down; a call past its own timeout is retried elsewhere, and the
// health checks, not the call, decide whether its worker is down (issue 45: workers flapped).
TEST(DispatcherTest, LoadIsNeitherRetriedNorMarkedDown) {
  for (const StatusCode code : {StatusCode::kResourceExhausted, StatusCode::kDeadlineExceeded}) {
    metrics::Registry registry;
    Dispatcher dispatcher({.chunk_tokens = 10}, registry);
    auto busy = std::make_shared<FakeBackend>("busy");
    busy->fail_with = code;
    auto good = std::make_shared<FakeBackend>("good");
    dispatcher.AddWorker(busy);
    dispatcher.AddWorker(good);
    Outcome outcome;
    dispatcher.Run(Job(4, 10), outcome.Callback());  // four chunks, two on each worker at first
    outcome.Wait();
    EXPECT_TRUE(dispatcher.workers()[0]->healthy.load()) << static_cast<int>(code);
    const std::string metrics = registry.Render();
    if (code == StatusCode::kResourceExhausted) {
      EXPECT_EQ(outcome.status.code(), StatusCode::kResourceExhausted);
      EXPECT_NE(metrics.find("stamen_gateway_retries_total 0"), std::string::npos) << metrics;
    } else {
      ASSERT_TRUE(outcome.status.ok()) << outcome.status.message();
      for (int i = 0; i < 4; ++i) EXPECT_EQ(outcome.values[i], static_cast<float>(i));
      EXPECT_EQ(metrics.find("stamen_gateway_retries_total 0"), std::string::npos) << metrics;
    }
  }
}

TEST(DispatcherTest, NoHealthyWorkerIsUnavailable) {
  metrics::Registry registry;
  Dispatcher dispatcher({}, registry);
  auto worker = std::make_shared<FakeBackend>("down");
  dispatcher.AddWorker(worker);
  dispatcher.workers()[0]->healthy = false;
  Outcome outcome;
  dispatcher.Run(Job(1, 10), outcome.Callback());
  outcome.Wait();
  EXPECT_EQ(outcome.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(worker->submitted, 0);
}

TEST(DispatcherTest, NamesResolveToEveryAddress) {
  metrics::Registry registry;
  Dispatcher dispatcher({}, registry);
  std::vector<std::string> made;
  const Status status = dispatcher.SetWorkerAddresses({"localhost:5001", "127.0.0.2:5002"}, [&](const std::string& address) {
    made.push_back(address);
    return std::make_shared<FakeBackend>(address);
  });
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_NE(std::find(made.begin(), made.end(), "127.0.0.1:5001"), made.end());
  EXPECT_NE(std::find(made.begin(), made.end(), "127.0.0.2:5002"), made.end());
  EXPECT_FALSE(dispatcher.SetWorkerAddresses({"no-port"}, nullptr).ok());
}

}  // namespace
}  // namespace stamen::gateway
