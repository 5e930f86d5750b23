// Fork-join pool with chunk claiming: a packed (generation, next chunk) word publishes a job
// and hands out its chunks; a counter of finished chunks tells the caller when it is done.
#include "core/thread_pool.h"

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
    next_.fetch_add(std::uint64_t{1} << 32);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::work_on(std::uint32_t generation, int thread) {
  for (;;) {
    std::uint64_t v = next_.load(std::memory_order_acquire);
    if (static_cast<std::uint32_t>(v >> 32) != generation) return;
    // Read the job before claiming: a successful claim proves these belong to `generation`,
    // since a newer job is only published after every chunk of this one was claimed.
    const std::int64_t n = n_chunks_.load(std::memory_order_acquire);
    const ChunkFn* fn = fn_.load(std::memory_order_relaxed);
    const std::int64_t chunk = static_cast<std::int64_t>(v & 0xffffffffu);
    if (chunk >= n) return;
    if (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) continue;
    (*fn)(chunk, thread);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run_chunks(std::int64_t n_chunks, ChunkFn fn) {
  if (n_chunks <= 0) return;
  if (n_threads_ == 1 || n_chunks == 1) {
    for (std::int64_t c = 0; c < n_chunks; ++c) fn(c, 0);
    return;
  }
  fn_.store(&fn, std::memory_order_relaxed);
  // Release: a worker that reads this new count also sees the previous job closed (below), so
  // its claim with a stale (generation, chunk) word fails instead of running a chunk of this job
  // under the old generation (which ran a chunk twice and left done_ above n_chunks: a hang).
  n_chunks_.store(n_chunks, std::memory_order_release);
  done_.store(0, std::memory_order_relaxed);
  std::uint32_t generation;
  {
    // The lock orders this publication against a worker that is about to sleep.
    std::lock_guard<std::mutex> lock(mutex_);
    generation = static_cast<std::uint32_t>((next_.load(std::memory_order_relaxed) >> 32) + 1);
    next_.store(static_cast<std::uint64_t>(generation) << 32, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) wake_.notify_all();
  work_on(generation, 0);
  while (done_.load(std::memory_order_acquire) != n_chunks) cpu_relax();
  // Close the job: no chunk index of this generation can be claimed any more.
  next_.store((static_cast<std::uint64_t>(generation) << 32) | 0xffffffffu, std::memory_order_release);
}

void ThreadPool::worker(int index) {
  std::uint32_t seen = 0;
  for (;;) {
    auto gen = [&] { return static_cast<std::uint32_t>(next_.load(std::memory_order_acquire) >> 32); };
    std::uint32_t g = gen();
    for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
      cpu_relax();
      g = gen();
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return gen() != seen; });
      sleepers_.fetch_sub(1);
      g = gen();
    }
    seen = g;
    if (stop_.load()) return;
    work_on(g, index);
  }
}

}  // namespace plexus
