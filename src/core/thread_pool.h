// A fork-join thread pool for kernels. A launch is cut into chunks that the caller and the
// workers claim one at a time, so a worker that is slow to wake (a busy machine) only means
// the others take its chunks: the launch never waits for a thread that has not started.
// Workers spin briefly before sleeping, so back-to-back launches (a decode step is hundreds
// of them) cost microseconds, and nothing allocates per launch.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace plexus {

// A non-owning reference to a callable `void(std::int64_t chunk, int thread)`.
class ChunkFn {
 public:
  template <typename F>
  ChunkFn(F& f)  // NOLINT: implicit on purpose
      : obj_(static_cast<void*>(&f)),
        call_([](void* o, std::int64_t c, int t) { (*static_cast<F*>(o))(c, t); }) {}
  void operator()(std::int64_t chunk, int thread) const { call_(obj_, chunk, thread); }

 private:
  void* obj_;
  void (*call_)(void*, std::int64_t, int);
};

class ThreadPool {
 public:
  // n_threads counts the calling thread; 0 means one per hardware thread.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(chunk, thread) for every chunk in [0, n_chunks), each exactly once, on the caller
  // and the workers; `thread` in [0, size()) names the executing thread (for scratch buffers).
  // Returns when all chunks are done.
  void run_chunks(std::int64_t n_chunks, ChunkFn fn);

  // Splits [0, n) into contiguous ranges (starting at multiples of `align`) and runs
  // fn(begin, end) on each.
  template <typename F>
  void parallel_for(std::int64_t n, std::int64_t align, F&& fn) {
    if (n <= 0) return;
    const std::int64_t blocks = (n + align - 1) / align;
    // Two chunks per thread: enough to even out a slow thread, few enough that each chunk is a
    // long contiguous stream (decode reads weights once; prefill converts row blocks once).
    const std::int64_t chunks = std::min<std::int64_t>(blocks, n_threads_ == 1 ? 1 : 2 * n_threads_);
    if (chunks <= 1) {
      fn(std::int64_t{0}, n);
      return;
    }
    auto task = [&](std::int64_t c, int) {
      const std::int64_t begin = blocks * c / chunks * align;
      const std::int64_t end = std::min(n, blocks * (c + 1) / chunks * align);
      if (begin < end) fn(begin, end);
    };
    run_chunks(chunks, ChunkFn(task));
  }

 private:
  void worker(int index);
  // Claims and runs chunks of the job published as `generation`; returns when none are left.
  void work_on(std::uint32_t generation, int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  // High 32 bits: job generation; low 32 bits: next unclaimed chunk of that job.
  std::atomic<std::uint64_t> next_{0};
  std::atomic<std::int64_t> n_chunks_{0};
  std::atomic<const ChunkFn*> fn_{nullptr};
  std::atomic<std::int64_t> done_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace plexus
