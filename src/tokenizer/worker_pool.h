// A process-wide pool of threads for the batch encoder: created once, so a batch costs no
// thread start-up, and each thread keeps its scratch memory between batches.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stamen::tokenizer {

class WorkerPool {
 public:
  // The shared pool, with one thread per core minus the caller's.
  static WorkerPool& Shared();

  explicit WorkerPool(size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs `task` on `helpers` pool threads (at most the pool's size) and on the calling
  // thread, and returns when all have finished. Calls are serialized.
  void Run(size_t helpers, const std::function<void()>& task);
  size_t size() const { return threads_.size(); }

 private:
  void Loop();

  std::mutex run_mutex_;  // one Run at a time
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::function<void()>* task_ = nullptr;
  size_t wanted_ = 0;      // helpers still to pick up the current task
  size_t running_ = 0;     // helpers executing it
  size_t generation_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace stamen::tokenizer
