// A fork-join thread pool for kernels: the caller plus N-1 workers run one task together and
// meet at the end. Workers spin briefly before sleeping, so back-to-back kernel launches (a
// decode step is hundreds of them) cost microseconds, and nothing allocates per launch.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace plexus {

// A non-owning reference to a callable `void(int thread, int n_threads)`.
class TaskRef {
 public:
  template <typename F>
  TaskRef(F& f)  // NOLINT: implicit on purpose
      : obj_(static_cast<void*>(&f)), call_([](void* o, int t, int n) { (*static_cast<F*>(o))(t, n); }) {}
  void operator()(int t, int n) const { call_(obj_, t, n); }

 private:
  void* obj_;
  void (*call_)(void*, int, int);
};

class ThreadPool {
 public:
  // n_threads counts the calling thread; 0 means one per hardware thread.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs task(t, size()) for t = 0..size()-1, t = 0 on the caller; returns when all finished.
  void run(TaskRef task);

  // Splits [0, n) into size() contiguous chunks (multiples of `align`, except the last) and
  // runs fn(begin, end) on each non-empty chunk.
  template <typename F>
  void parallel_for(std::int64_t n, std::int64_t align, F&& fn) {
    if (n <= 0) return;
    auto task = [&](int t, int nt) {
      const std::int64_t blocks = (n + align - 1) / align;
      const std::int64_t b0 = blocks * t / nt, b1 = blocks * (t + 1) / nt;
      const std::int64_t begin = b0 * align, end = std::min(n, b1 * align);
      if (begin < end) fn(begin, end);
    };
    if (n_threads_ == 1 || n <= align) {
      fn(std::int64_t{0}, n);
      return;
    }
    run(TaskRef(task));
  }

 private:
  void worker(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  const TaskRef* task_ = nullptr;
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace plexus
