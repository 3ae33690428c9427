// The pool behind ParallelFor (thread_pool.h). One loop runs at a time; it is published as
// a generation of the pool's state:
//   - generation_ is even while a loop's fields stand still, odd while the caller rewrites
//     them. A worker counts itself in active_ and then checks that the generation it saw is
//     still current; the caller makes the generation odd and then waits for active_ to reach
//     zero before it writes. In the sequentially consistent order of those four operations one
//     of the two sees the other, so no worker reads fields being written.
//   - the tasks are split into one contiguous range per thread, as a static schedule would
//     split them (each thread streams adjacent weights, which the prefetchers follow: a shared
//     counter handing out tasks in turn ran a 16-token step 15% slower). A thread takes tasks
//     from the front of its own range, then from the back of the others': a thread that is
//     asleep or descheduled leaves its tasks to the rest rather than holding the loop up.
//   - the caller, having found no task left anywhere, waits for active_ to reach zero, which
//     also makes the workers' results visible to it.
#include "engine/cpu/thread_pool.h"

#include <immintrin.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace stamen::engine::cpu {
namespace {

// How long an idle worker spins for the next loop before it sleeps. The gaps between the
// loops of one step are a few microseconds; between the steps of a busy server, tens. Longer
// only burns a core another thread may want.
constexpr auto kSpin = std::chrono::microseconds(100);
// Spins of the caller waiting for the workers' last tasks before it yields its core, in case
// the worker it waits for is descheduled and waiting for that very core.
constexpr int kSpinsBeforeYield = 4096;
// More workers than this are never started, whatever thread count a caller asks for: a loop
// runs on at most kMostWorkers + 1 threads (one task range each, ThreadPool::ranges_).
constexpr int kMostWorkers = 255;

// Set on the pool's workers, and on a caller while it runs tasks: ParallelFor from there runs
// serially.
thread_local bool inside_pool = false;

class ThreadPool {
 public:
  static ThreadPool& Get() {
    // Never destroyed: a worker may sleep in it while the process exits.
    static ThreadPool* pool = new ThreadPool;
    return *pool;
  }

  // Runs the loop on this thread and threads − 1 workers (threads ≤ kMostWorkers + 1); false
  // (nothing run) when another thread's loop holds the pool.
  bool TryRun(int64_t count, int threads, internal::TaskFunction task, const void* body) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    StartWorkers(threads - 1);
    Publish(count, threads - 1, task, body);
    inside_pool = true;
    RunTasks(0, task, body, threads);
    inside_pool = false;
    WaitForWorkers();
    return true;
  }

  void Park() { park_.store(true, std::memory_order_relaxed); }

 private:
  void StartWorkers(int wanted) {
    for (; workers_ < wanted; ++workers_) {
      std::thread([this, index = workers_] { WorkerLoop(index); }).detach();
    }
  }

  void Publish(int64_t count, int workers, internal::TaskFunction task, const void* body) {
    generation_.fetch_add(1, std::memory_order_seq_cst);  // odd: fields being written
    while (active_.load(std::memory_order_seq_cst) != 0) _mm_pause();
    task_.store(task, std::memory_order_relaxed);
    body_.store(body, std::memory_order_relaxed);
    workers_allowed_.store(workers, std::memory_order_relaxed);
    const int64_t threads = workers + 1;
    for (int64_t t = 0; t < threads; ++t) {
      const uint64_t front = static_cast<uint64_t>(count * t / threads), back = count * (t + 1) / threads;
      ranges_[t].tasks.store(front << 32 | back, std::memory_order_relaxed);
    }
    park_.store(false, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);  // even: published
    if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  }

  // Runs tasks until none is left: thread `self`'s own range from the front, then the others'
  // from the back. acq_rel: a worker's claim carries its active_ increment to whoever reads
  // that range after it.
  void RunTasks(int self, internal::TaskFunction task, const void* body, int threads) {
    for (int64_t i; (i = ClaimFront(ranges_[self].tasks)) >= 0;) task(body, i);
    for (int other = (self + 1) % threads; other != self; other = (other + 1) % threads) {
      for (int64_t i; (i = ClaimBack(ranges_[other].tasks)) >= 0;) task(body, i);
    }
  }

  static int64_t ClaimFront(std::atomic<uint64_t>& range) {
    uint64_t tasks = range.load(std::memory_order_acquire);
    while ((tasks >> 32) < (tasks & 0xffffffffu)) {
      if (range.compare_exchange_weak(tasks, tasks + (uint64_t{1} << 32), std::memory_order_acq_rel)) {
        return static_cast<int64_t>(tasks >> 32);
      }
    }
    return -1;
  }

  static int64_t ClaimBack(std::atomic<uint64_t>& range) {
    uint64_t tasks = range.load(std::memory_order_acquire);
    while ((tasks >> 32) < (tasks & 0xffffffffu)) {
      if (range.compare_exchange_weak(tasks, tasks - 1, std::memory_order_acq_rel)) {
        return static_cast<int64_t>((tasks & 0xffffffffu) - 1);
      }
    }
    return -1;
  }

  void WaitForWorkers() {
    for (int spins = 0; active_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < kSpinsBeforeYield) {
        _mm_pause();
      } else {
        sched_yield();
      }
    }
  }

  // Until the generation is even and other than `seen`: spins for kSpin (less if parked),
  // then sleeps. Returns the new generation.
  uint32_t WaitForLoop(uint32_t seen) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    for (int spins = 0;; ++spins) {
      const uint32_t current = generation_.load(std::memory_order_acquire);
      if (current != seen && current % 2 == 0) return current;
      if (park_.load(std::memory_order_relaxed) ||
          (spins % 64 == 63 && std::chrono::steady_clock::now() > spin_until)) {
        break;
      }
      _mm_pause();
    }
    for (;;) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      const uint32_t current = generation_.load(std::memory_order_seq_cst);
      if (current == seen || current % 2 == 1) generation_.wait(current, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      const uint32_t woken = generation_.load(std::memory_order_acquire);
      if (woken != seen && woken % 2 == 0) return woken;
    }
  }

  void WorkerLoop(int index) {
    inside_pool = true;
    uint32_t seen = 0;
    for (;;) {
      const uint32_t current = WaitForLoop(seen);
      seen = current;
      active_.fetch_add(1, std::memory_order_seq_cst);
      const int workers = workers_allowed_.load(std::memory_order_relaxed);
      if (generation_.load(std::memory_order_seq_cst) == current && index < workers) {
        RunTasks(index + 1, task_.load(std::memory_order_relaxed), body_.load(std::memory_order_relaxed), workers + 1);
      }
      active_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::mutex mutex_;  // held by the thread whose loop runs
  int workers_ = 0;  // started (detached: they live as long as the process)
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> active_{0};    // workers inside the current generation
  std::atomic<int> sleepers_{0};  // workers asleep (or about to be) on generation_
  std::atomic<bool> park_{false};
  // The loop's fields (atomic so that a reader a generation late reads stale values, not torn ones).
  std::atomic<internal::TaskFunction> task_{nullptr};
  std::atomic<const void*> body_{nullptr};
  std::atomic<int> workers_allowed_{0};
  // Each thread's range of tasks, [front, back) packed as front << 32 | back; the caller's is
  // ranges_[0], worker i's ranges_[i + 1]. One cache line each.
  struct alignas(64) Range {
    std::atomic<uint64_t> tasks{0};
  };
  Range ranges_[kMostWorkers + 1];
};

}  // namespace

int LoopThreads() { return omp_get_max_threads(); }

namespace internal {

void RunParallel(int64_t count, int threads, TaskFunction task, const void* body) {
  // More threads than the pool has task ranges for would write past them (a machine with more
  // than 256 hardware threads): such a loop runs on the pool's most.
  const int64_t used = std::min<int64_t>({threads, count, int64_t{kMostWorkers} + 1});
  // Task numbers live in 32 bits of a range (ThreadPool::Range).
  if (used <= 1 || count > INT32_MAX || inside_pool || omp_in_parallel() || !ThreadPool::Get().TryRun(count, static_cast<int>(used), task, body)) {
    for (int64_t i = 0; i < count; ++i) task(body, i);
  }
}

}  // namespace internal

void ParkWorkers() { ThreadPool::Get().Park(); }

}  // namespace stamen::engine::cpu
