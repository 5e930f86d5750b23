// A fork-join thread pool for kernels. A launch is cut into pieces that the caller and the
// workers claim as they go, so a worker that is slow to wake (a busy machine) only means the
// others take its share: the launch never waits for a thread that has not started. How idle
// threads wait is the WaitPolicy: spinning keeps back-to-back launches (a decode step is
// hundreds of them) at microseconds on an idle machine, sleeping leaves the cores to whoever
// needs them on a busy one. Nothing allocates per launch.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

namespace plexus {

// How a thread with nothing to do waits: for the next launch (a worker) or for the last piece
// of a launch that others still compute (the caller).
enum class WaitPolicy {
  kSpin,     // spin ~20,000 pause loops before sleeping; the caller spins until the launch ends
  kPassive,  // sleep at once (futex); the last thread to finish wakes the caller
  kAuto,     // spin for a time budget measured as it goes: none while the cores are contended,
             // when the caller alone also runs launches if that is measured faster than the team
};
std::string_view wait_policy_name(WaitPolicy policy);
// "spin", "passive", "auto"; nullopt for anything else.
std::optional<WaitPolicy> parse_wait_policy(std::string_view name);
inline constexpr std::string_view kWaitPolicyChoices = "spin, passive or auto";
// The value of a --wait flag; anything else is an InputError naming the flag and the choices.
WaitPolicy wait_policy_flag(std::string_view value);

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
  explicit ThreadPool(int n_threads = 0, WaitPolicy wait = WaitPolicy::kAuto);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  WaitPolicy wait_policy() const { return wait_; }

  // Runs fn(chunk, thread) for every chunk in [0, n_chunks), each exactly once, on the caller
  // and the workers; `thread` in [0, size()) names the executing thread (for scratch buffers).
  // Returns when all chunks are done. One launch at a time: the pool is not re-entrant.
  void run_chunks(std::int64_t n_chunks, ChunkFn fn);

  // Splits [0, n) into contiguous ranges (starting at multiples of `align`) and runs
  // fn(begin, end) on each. Ranges shrink as the work runs out (guided self-scheduling): the
  // first are long streams, the last small, so a thread that stalls mid-range (descheduled)
  // holds little of the launch up while the others finish the rest. Which ranges a thread gets
  // varies; each index is in exactly one range.
  template <typename F>
  void parallel_for(std::int64_t n, std::int64_t align, F&& fn) {
    if (n <= 0) return;
    const std::int64_t blocks = (n + align - 1) / align;
    if (n_threads_ == 1 || blocks <= 1) {
      fn(std::int64_t{0}, n);
      return;
    }
    auto range = [&](std::int64_t b, std::int64_t e, int) { fn(b * align, std::min(n, e * align)); };
    // A claim takes 1/(2 * threads) of what is left, at least 1/(8 * threads) of the whole.
    const std::int64_t divisor = 2 * n_threads_;
    launch(blocks, std::max<std::int64_t>(1, blocks / (4 * divisor)), divisor, RangeFn(range));
  }

 private:
  // A non-owning reference to `void(std::int64_t begin, std::int64_t end, int thread)`.
  class RangeFn {
   public:
    template <typename F>
    explicit RangeFn(F& f)
        : obj_(static_cast<void*>(&f)),
          call_([](void* o, std::int64_t b, std::int64_t e, int t) { (*static_cast<F*>(o))(b, e, t); }) {}
    void operator()(std::int64_t b, std::int64_t e, int thread) const { call_(obj_, b, e, thread); }

   private:
    void* obj_;
    void (*call_)(void*, std::int64_t, std::int64_t, int);
  };

  // Runs fn over [0, n_units) in claims of max(min_claim, left / divisor) units (divisor 0:
  // exactly min_claim), on the caller and the workers, and returns when all are done.
  void launch(std::int64_t n_units, std::int64_t min_claim, std::int64_t divisor, RangeFn fn);
  void worker(int index);
  // Claims and runs pieces of the job published as `generation`; returns when none are left.
  void work_on(std::uint32_t generation, int thread);
  // What a thread saw at its last look at its involuntary context switches (kAuto).
  struct Preemptions {
    long count = 0;
    std::int64_t looked_at = 0;  // steady-clock ns
  };
  // A worker's wait for a job newer than `seen`; returns its generation.
  std::uint32_t wait_for_job(std::uint32_t seen, Preemptions& preemptions);
  // The caller's wait until every claimed piece is finished.
  void wait_until_done();
  // kAuto: how long to spin now (0 while the cores were seen contended), and what waits teach.
  std::int64_t spin_budget_ns(std::int64_t now) const;
  // One sign of contention (a thread descheduled or preempted `signs` times); the cores count
  // as contended only when signs come often (see kSignsForContention).
  void note_preempted(std::int64_t now, int signs = 1);
  void note_slept(std::int64_t slept_ns, std::int64_t now);
  // kAuto, before a thread sleeps and at least every millisecond it waits: was it preempted
  // (more involuntary context switches) since its last look? Then others want these cores.
  void check_preempted(Preemptions& seen, std::int64_t now, bool sleeping);
  // kAuto while the cores are contended: is the team (caller and workers) or the caller alone
  // faster? A worker preempted mid-range by the other work holds every launch up, so on a busy
  // machine one thread can beat two. Each way is measured over windows of launches (units run per
  // nanosecond of launch time; a decode step's mix of launches is the same either way), the
  // faster one is kept, and the slower one is measured again from time to time.
  void judge_team(std::int64_t launch_ns, std::int64_t units, std::int64_t now);

  int n_threads_;
  WaitPolicy wait_;
  std::vector<std::thread> workers_;
  // The job. High 32 bits of next_: its generation; low 32 bits: its next unclaimed unit.
  std::atomic<std::uint64_t> next_{0};
  std::atomic<std::int64_t> n_units_{0};
  std::atomic<std::int64_t> min_claim_{1};
  std::atomic<std::int64_t> divisor_{0};
  std::atomic<const RangeFn*> fn_{nullptr};
  // Units claimed but not finished, or not yet claimed; the caller sleeps on it (passive/auto).
  std::atomic<std::uint32_t> pending_{0};
  std::atomic<bool> caller_sleeping_{false};
  // The generation of the latest job: what idle workers spin on and sleep on (futex). On its
  // own cache line, away from the claims.
  alignas(64) std::atomic<std::uint32_t> epoch_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  // kAuto's measured state (steady-clock nanoseconds): the spin budget, until when the cores
  // count as contended, and how long the last such hold was.
  alignas(64) std::atomic<std::int64_t> spin_ns_;
  std::atomic<std::int64_t> contended_until_{0};
  std::atomic<std::int64_t> hold_ns_;
  // Signs of preemption counted since window_start_ns_.
  std::atomic<std::int64_t> window_start_ns_{0};
  std::atomic<int> window_signs_{0};
  // judge_team's state (the launching thread's own: launches are not re-entrant): the way now
  // used, what its window has counted, each way's last measured rate (0: not measured) and until
  // when the faster way runs before the other is measured again.
  bool alone_ = false;
  std::int64_t window_ns_ = 0, window_units_ = 0, keep_until_ns_ = 0;
  double units_per_ns_[2] = {0, 0};  // [team, alone]
  // The launching thread and its involuntary context switches at its last look (kAuto).
  std::thread::id caller_thread_;
  Preemptions caller_preemptions_;
};

}  // namespace plexus
