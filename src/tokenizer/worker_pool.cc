// Generation-counted hand-off: Run publishes a task and a helper count; idle threads take it
// until the count is used up; Run waits until every taker has finished.
#include "tokenizer/worker_pool.h"

#include <algorithm>

namespace stamen::tokenizer {

WorkerPool& WorkerPool::Shared() {
  static WorkerPool pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  return pool;
}

WorkerPool::WorkerPool(size_t threads) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void WorkerPool::Run(size_t helpers, const std::function<void()>& task) {
  std::lock_guard run_lock(run_mutex_);
  helpers = std::min(helpers, threads_.size());
  if (helpers > 0) {
    std::lock_guard lock(mutex_);
    task_ = &task;
    wanted_ = helpers;
    ++generation_;
  }
  work_ready_.notify_all();
  task();
  std::unique_lock lock(mutex_);
  work_done_.wait(lock, [this] { return wanted_ == 0 && running_ == 0; });
  task_ = nullptr;
}

void WorkerPool::Loop() {
  size_t seen_generation = 0;
  std::unique_lock lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [&] { return stopping_ || (wanted_ > 0 && generation_ != seen_generation); });
    if (stopping_) return;
    seen_generation = generation_;
    --wanted_;
    ++running_;
    const std::function<void()>* task = task_;
    lock.unlock();
    (*task)();
    lock.lock();
    --running_;
    if (wanted_ == 0 && running_ == 0) work_done_.notify_all();
  }
}

}  // namespace stamen::tokenizer
