// ParallelFor (engine/cpu/thread_pool.h): every task runs once and its writes are visible when
// the loop returns, whatever the thread count, however loops follow one another, from several
// calling threads at once, nested, and after the workers have gone to sleep or been parked.
#include "engine/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace stamen::engine::cpu {
namespace {

// Runs one loop of `count` tasks on `threads` threads; true when each task ran exactly once
// and the caller sees every task's plain (non-atomic) write.
bool EachTaskRunsOnce(int64_t count, int threads) {
  std::vector<std::atomic<int>> runs(count);
  std::vector<int64_t> written(count, -1);
  ParallelFor(
      count,
      [&](int64_t task) {
        runs[task].fetch_add(1, std::memory_order_relaxed);
        written[task] = task * 3;
      },
      threads);
  for (int64_t task = 0; task < count; ++task) {
    if (runs[task].load() != 1 || written[task] != task * 3) return false;
  }
  return true;
}

TEST(ThreadPoolTest, EveryTaskRunsOnceForAnyCountAndThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t count : {0, 1, 2, 3, 7, 64, 1000}) {
      EXPECT_TRUE(EachTaskRunsOnce(count, threads)) << count << " tasks on " << threads << " threads";
    }
  }
}

TEST(ThreadPoolTest, ManyShortLoopsInARow) {
  // Loops follow each other faster than a worker can notice one has ended: generations must not mix.
  for (int loop = 0; loop < 20000; ++loop) {
    ASSERT_TRUE(EachTaskRunsOnce(1 + loop % 5, 2 + loop % 3)) << "loop " << loop;
  }
}

TEST(ThreadPoolTest, LoopsAfterTheWorkersSleptOrWereParked) {
  ASSERT_TRUE(EachTaskRunsOnce(100, 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: the workers sleep
  EXPECT_TRUE(EachTaskRunsOnce(100, 4));
  ParkWorkers();
  EXPECT_TRUE(EachTaskRunsOnce(100, 4));
  ParkWorkers();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(EachTaskRunsOnce(100, 4));
}

TEST(ThreadPoolTest, NestedLoopsRunInsideTheirTask) {
  std::vector<std::atomic<int>> runs(16 * 16);
  ParallelFor(
      16,
      [&](int64_t outer) {
        ParallelFor(16, [&](int64_t inner) { runs[outer * 16 + inner].fetch_add(1); }, 4);
      },
      4);
  for (const auto& count : runs) EXPECT_EQ(count.load(), 1);
}

TEST(ThreadPoolTest, SeveralCallingThreadsAtOnce) {
  // One caller holds the pool at a time; the others run their loops serially, all correctly.
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int caller = 0; caller < 4; ++caller) {
    callers.emplace_back([&failures, caller] {
      for (int loop = 0; loop < 2000; ++loop) {
        if (!EachTaskRunsOnce(1 + (loop + caller) % 17, 3)) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPoolTest, ThreadsShareTheTasks) {
  // With tasks that take a while, a worker takes some: the loop is not run by the caller alone.
  std::vector<std::thread::id> ran_on(8);
  ParallelFor(
      8,
      [&](int64_t task) {
        ran_on[task] = std::this_thread::get_id();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      },
      2);
  int on_caller = 0;
  for (const auto& id : ran_on) on_caller += id == std::this_thread::get_id();
  EXPECT_LT(on_caller, 8);
}

TEST(ThreadPoolTest, MoreThreadsThanThePoolHoldsRunOnItsMost) {
  // A machine with more hardware threads than the pool's 256 task ranges (a 2-socket EPYC has
  // 384): the loop runs on 256 threads, and every task still runs once. Last in this file: it
  // leaves 255 sleeping workers behind.
  EXPECT_TRUE(EachTaskRunsOnce(1000, 300));
}

}  // namespace
}  // namespace stamen::engine::cpu
