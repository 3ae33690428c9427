// A fixed pool of threads running queued tasks; each task learns which thread runs it, so
// per-thread state (a tokenizer with its scratch memory) needs no lock.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stamen::gateway {

class TaskPool {
 public:
  using Task = std::function<void(size_t thread_index)>;

  explicit TaskPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this, i] { Loop(i); });
  }
  // Runs what is queued, then joins.
  ~TaskPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& thread : threads_) thread.join();
  }
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void Post(Task task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
  }
  size_t size() const { return threads_.size(); }

 private:
  void Loop(size_t index) {
    std::unique_lock lock(mutex_);
    while (true) {
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      Task task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task(index);
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace stamen::gateway
