// The queue thread: pop a task, run it outside the lock, remember the first error.
#include "backend/cpu/work_queue.h"

#include <utility>

namespace plexus {

WorkQueue::WorkQueue(std::string name) : name_(std::move(name)), thread_([this] { loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void WorkQueue::enqueue(std::function<void()> task, bool always_run) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(Task{std::move(task), always_run});
  }
  work_cv_.notify_one();
}

void WorkQueue::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
  if (error_) {
    std::exception_ptr error = std::exchange(error_, nullptr);
    std::rethrow_exception(error);
  }
}

void WorkQueue::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stop_ and drained
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    const bool skip = error_ != nullptr && !task.always_run;
    busy_ = true;
    lock.unlock();
    std::exception_ptr failure;
    if (!skip) {
      try {
        task.run();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    task.run = nullptr;  // destroy captures outside the lock
    lock.lock();
    if (failure && !error_) error_ = failure;
    busy_ = false;
    if (tasks_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace plexus
