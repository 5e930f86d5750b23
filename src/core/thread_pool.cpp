// Fork-join pool: a generation counter publishes work, a countdown collects completion.
#include "core/thread_pool.h"

#include <chrono>

namespace plexus {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
constexpr int kSpinIterations = 20000;  // ~ tens of microseconds before a worker sleeps
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::thread::hardware_concurrency());
  if (n_threads <= 0) n_threads = 1;
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run(TaskRef task) {
  if (n_threads_ == 1) {
    task(0, 1);
    return;
  }
  task_ = &task;
  remaining_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    // The lock orders this publication against a worker that is about to sleep.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) wake_.notify_all();
  task(0, n_threads_);
  while (remaining_.load(std::memory_order_acquire) != 0) cpu_relax();
  task_ = nullptr;
}

void ThreadPool::worker(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
      cpu_relax();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      sleepers_.fetch_sub(1);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load()) return;
    (*task_)(index, n_threads_);
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace plexus
