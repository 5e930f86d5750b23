// Fork-join pool with claiming: a packed (generation, next unit) word publishes a job and hands
// out its pieces; a count of unfinished units tells the caller when it is done. Idle threads
// wait on futexes (Linux) after spinning as the WaitPolicy says.
#include "core/thread_pool.h"

#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cassert>
#include <chrono>
#include <climits>

#include "core/error.h"

namespace plexus {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Sleeps while *word == expected (returns at once when it is not, or on a spurious wake).
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake(std::atomic<std::uint32_t>& word, int n) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0);
}

// This thread's involuntary context switches so far (preempted while it could run).
long involuntary_switches() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nivcsw;
}

// kSpin: pause loops before a worker sleeps (~tens to hundreds of microseconds).
constexpr int kSpinPauses = 20000;
// kAuto: the spin budget moves between these; it starts at kAutoStartNs.
constexpr std::int64_t kAutoMinSpinNs = 1000;
constexpr std::int64_t kAutoMaxSpinNs = 200000;
constexpr std::int64_t kAutoStartNs = 50000;
// A spin checks the clock every kClockEvery pauses (a microsecond or less); a gap longer than
// kDescheduledNs between two looks means the thread was not running: descheduled.
constexpr int kClockEvery = 16;
constexpr std::int64_t kDescheduledNs = 50000;
// A lone preemption is no contention: on an otherwise idle host (a VM especially) a spinning
// thread is still descheduled or preempted now and then (measured on the 2-core KVM host: about
// 8 clock gaps over 50 µs and 15-25 involuntary switches a second per thread), and holding off
// spinning for each cost a fifth of quiet decode speed. Cores shared with a busy process preempt
// every few milliseconds (each scheduler slice), so contention is this many signs within a window.
constexpr int kSignsForContention = 4;
constexpr std::int64_t kSignWindowNs = 50000000;
// After contention is seen, nobody spins for a hold (each look meanwhile that sees it again
// extends it). A hold starts at kMinHoldNs and doubles, up to kMaxHoldNs, when contention is seen
// again soon after one ended: the cost of probing whether the cores are free again stays small.
constexpr std::int64_t kMinHoldNs = 20000000;
constexpr std::int64_t kMaxHoldNs = 1000000000;
// A waiting thread looks at its involuntary context switches before it sleeps and otherwise at
// most this often (a system call): preemption mid-chunk is seen within about this long.
constexpr std::int64_t kLookEveryNs = 1000000;
// judge_team: each way is measured over a window of this much launch time; the faster one then
// runs this long before the slower one is measured again.
constexpr std::int64_t kJudgeWindowNs = 20000000;
constexpr std::int64_t kKeepNs = 400000000;

// Spins until done() or for budget_ns (kAuto) / kSpinPauses (kSpin). Returns done(); sets
// `descheduled` when a spin saw the thread stop running.
template <typename Done>
bool spin_until(Done done, WaitPolicy policy, std::int64_t budget_ns, bool& descheduled) {
  descheduled = false;
  if (policy == WaitPolicy::kSpin) {
    for (int i = 0; i < kSpinPauses; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    return done();
  }
  if (policy == WaitPolicy::kPassive || budget_ns <= 0) return done();
  const std::int64_t start = now_ns();
  std::int64_t last = start;
  for (;;) {
    for (int i = 0; i < kClockEvery; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    const std::int64_t t = now_ns();
    if (t - last > kDescheduledNs) {
      descheduled = true;
      return done();
    }
    if (t - start >= budget_ns) return done();
    last = t;
  }
}

}  // namespace

std::string_view wait_policy_name(WaitPolicy policy) {
  switch (policy) {
    case WaitPolicy::kSpin: return "spin";
    case WaitPolicy::kPassive: return "passive";
    case WaitPolicy::kAuto: return "auto";
  }
  return "auto";
}

WaitPolicy wait_policy_flag(std::string_view value) {
  if (const std::optional<WaitPolicy> p = parse_wait_policy(value)) return *p;
  throw InputError("--wait must be " + std::string(kWaitPolicyChoices) + ", got '" + std::string(value) + "'");
}

std::optional<WaitPolicy> parse_wait_policy(std::string_view name) {
  for (WaitPolicy p : {WaitPolicy::kSpin, WaitPolicy::kPassive, WaitPolicy::kAuto}) {
    if (name == wait_policy_name(p)) return p;
  }
  return std::nullopt;
}

ThreadPool::ThreadPool(int n_threads, WaitPolicy wait) : wait_(wait), spin_ns_(kAutoStartNs), hold_ns_(kMinHoldNs) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::thread::hardware_concurrency());
  if (n_threads <= 0) n_threads = 1;
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  epoch_.fetch_add(1);
  futex_wake(epoch_, INT_MAX);
  for (auto& w : workers_) w.join();
}

std::int64_t ThreadPool::spin_budget_ns(std::int64_t now) const {
  if (now < contended_until_.load(std::memory_order_relaxed)) return 0;
  return spin_ns_.load(std::memory_order_relaxed);
}

void ThreadPool::note_preempted(std::int64_t now, int signs) {
  // Threads race here only with equal intents: relaxed is enough, a lost count costs one sign.
  if (now - window_start_ns_.load(std::memory_order_relaxed) > kSignWindowNs) {
    window_start_ns_.store(now, std::memory_order_relaxed);
    window_signs_.store(signs, std::memory_order_relaxed);
  } else {
    window_signs_.fetch_add(signs, std::memory_order_relaxed);
  }
  if (window_signs_.load(std::memory_order_relaxed) < kSignsForContention) return;
  spin_ns_.store(kAutoMinSpinNs, std::memory_order_relaxed);
  // Threads race here only with equal intents (a hold from about now): relaxed is enough.
  const std::int64_t until = contended_until_.load(std::memory_order_relaxed);
  std::int64_t hold = hold_ns_.load(std::memory_order_relaxed);
  if (now >= until) {
    hold = now < until + 4 * hold ? std::min(2 * hold, kMaxHoldNs) : kMinHoldNs;
    hold_ns_.store(hold, std::memory_order_relaxed);
  }
  contended_until_.store(std::max(until, now + hold), std::memory_order_relaxed);
}

void ThreadPool::note_slept(std::int64_t slept_ns, std::int64_t now) {
  if (now < contended_until_.load(std::memory_order_relaxed)) return;
  const std::int64_t spin = spin_ns_.load(std::memory_order_relaxed);
  // Woken soon after giving up: a longer spin would have caught it. Long idle: spin less.
  const std::int64_t next = slept_ns < kAutoMaxSpinNs ? std::max(2 * spin, slept_ns + slept_ns / 4) : spin / 2;
  spin_ns_.store(std::clamp(next, kAutoMinSpinNs, kAutoMaxSpinNs), std::memory_order_relaxed);
}

void ThreadPool::check_preempted(Preemptions& seen, std::int64_t now, bool sleeping) {
  if (!sleeping && now - seen.looked_at < kLookEveryNs) return;
  const long count = involuntary_switches();
  if (count > seen.count) note_preempted(now, static_cast<int>(std::min<long>(count - seen.count, kSignsForContention)));
  seen.count = count;
  seen.looked_at = now;
}

void ThreadPool::work_on(std::uint32_t generation, int thread) {
  for (;;) {
    std::uint64_t v = next_.load(std::memory_order_acquire);
    if (static_cast<std::uint32_t>(v >> 32) != generation) return;
    // Read the job before claiming: a successful claim proves these belong to `generation`,
    // since a newer job is only published after every unit of this one was claimed.
    const std::int64_t n = n_units_.load(std::memory_order_acquire);
    const std::int64_t min_claim = min_claim_.load(std::memory_order_relaxed);
    const std::int64_t divisor = divisor_.load(std::memory_order_relaxed);
    const RangeFn* fn = fn_.load(std::memory_order_relaxed);
    const std::int64_t begin = static_cast<std::int64_t>(v & 0xffffffffu);
    if (begin >= n) return;
    const std::int64_t left = n - begin;
    const std::int64_t take = std::min(left, divisor > 0 ? std::max(min_claim, left / divisor) : min_claim);
    if (!next_.compare_exchange_weak(v, v + static_cast<std::uint64_t>(take), std::memory_order_acq_rel)) continue;
    (*fn)(begin, begin + take, thread);
    // The last unit finished: wake the caller if it sleeps (it set the flag before sleeping;
    // both sides are sequentially consistent, so one of them sees the other).
    if (pending_.fetch_sub(static_cast<std::uint32_t>(take)) == static_cast<std::uint32_t>(take) &&
        caller_sleeping_.load()) {
      futex_wake(pending_, 1);
    }
  }
}

void ThreadPool::run_chunks(std::int64_t n_chunks, ChunkFn fn) {
  if (n_chunks <= 0) return;
  if (n_threads_ == 1 || n_chunks == 1) {
    for (std::int64_t c = 0; c < n_chunks; ++c) fn(c, 0);
    return;
  }
  // One chunk per claim: chunks are the caller's units of balance (rows of different lengths).
  constexpr std::int64_t kMaxUnits = 0x7fffffff;
  for (std::int64_t base = 0; base < n_chunks; base += kMaxUnits) {
    auto range = [&](std::int64_t b, std::int64_t e, int thread) {
      for (std::int64_t c = b; c < e; ++c) fn(base + c, thread);
    };
    launch(std::min(kMaxUnits, n_chunks - base), 1, 0, RangeFn(range));
  }
}

void ThreadPool::launch(std::int64_t n_units, std::int64_t min_claim, std::int64_t divisor, RangeFn fn) {
  assert(n_units > 0 && n_units < 0xffffffff);
  const std::int64_t t0 = wait_ == WaitPolicy::kAuto ? now_ns() : 0;
  if (alone_) {
    fn(0, n_units, 0);
    const std::int64_t t = now_ns();
    judge_team(t - t0, n_units, t);
    return;
  }
  fn_.store(&fn, std::memory_order_relaxed);
  min_claim_.store(min_claim, std::memory_order_relaxed);
  divisor_.store(divisor, std::memory_order_relaxed);
  pending_.store(static_cast<std::uint32_t>(n_units), std::memory_order_relaxed);
  // Release: a worker that reads this new count also sees the previous job closed (below), so
  // its claim with a stale (generation, unit) word fails instead of running a piece of this job
  // under the old generation (which ran it twice and left pending_ wrapped: a hang).
  n_units_.store(n_units, std::memory_order_release);
  const std::uint32_t generation = static_cast<std::uint32_t>((next_.load(std::memory_order_relaxed) >> 32) + 1);
  next_.store(static_cast<std::uint64_t>(generation) << 32, std::memory_order_release);
  epoch_.store(generation);  // seq_cst, against a worker about to sleep (it counts itself first)
  if (const int sleeping = sleepers_.load(); sleeping > 0) {
    futex_wake(epoch_, static_cast<int>(std::min<std::int64_t>(sleeping, n_units - 1)));
  }
  work_on(generation, 0);
  wait_until_done();
  if (wait_ == WaitPolicy::kAuto) {
    const std::int64_t t = now_ns();
    judge_team(t - t0, n_units, t);
  }
  // Close the job: no unit of this generation can be claimed any more.
  next_.store((static_cast<std::uint64_t>(generation) << 32) | 0xffffffffu, std::memory_order_release);
}

void ThreadPool::judge_team(std::int64_t launch_ns, std::int64_t units, std::int64_t now) {
  if (now >= contended_until_.load(std::memory_order_relaxed)) {  // cores free: the team, always
    alone_ = false;
    window_ns_ = window_units_ = 0;
    units_per_ns_[0] = units_per_ns_[1] = 0;
    return;
  }
  window_ns_ += launch_ns;
  window_units_ += units;
  if (window_ns_ < kJudgeWindowNs) return;
  const int way = alone_ ? 1 : 0, other = 1 - way;
  units_per_ns_[way] = static_cast<double>(window_units_) / static_cast<double>(window_ns_);
  window_ns_ = window_units_ = 0;
  if (units_per_ns_[other] == 0) {  // never measured: measure it now
    alone_ = !alone_;
  } else if (units_per_ns_[other] > units_per_ns_[way]) {  // the other is faster: keep it a while
    alone_ = !alone_;
    keep_until_ns_ = now + kKeepNs;
  } else if (now >= keep_until_ns_) {  // this one is faster; time to measure the other again
    alone_ = !alone_;
  }
}

void ThreadPool::wait_until_done() {
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (done()) return;
  if (wait_ == WaitPolicy::kSpin) {
    while (!done()) cpu_relax();
    return;
  }
  const std::int64_t start = now_ns();
  if (wait_ == WaitPolicy::kAuto) {
    if (caller_thread_ != std::this_thread::get_id()) {  // a new launching thread: its own count
      caller_thread_ = std::this_thread::get_id();
      caller_preemptions_ = Preemptions{involuntary_switches(), start};
    }
    check_preempted(caller_preemptions_, start, false);
  }
  bool descheduled = false;
  if (spin_until(done, wait_, spin_budget_ns(start), descheduled)) return;
  if (wait_ == WaitPolicy::kAuto) {
    const std::int64_t t = now_ns();
    if (descheduled) note_preempted(t);
    check_preempted(caller_preemptions_, t, true);
  }
  caller_sleeping_.store(true);
  for (std::uint32_t left = pending_.load(); left != 0; left = pending_.load()) futex_wait(pending_, left);
  caller_sleeping_.store(false, std::memory_order_relaxed);
  if (wait_ == WaitPolicy::kAuto) {
    const std::int64_t t = now_ns();
    note_slept(t - start, t);
  }
}

std::uint32_t ThreadPool::wait_for_job(std::uint32_t seen, Preemptions& preemptions) {
  auto fresh = [&] { return epoch_.load(std::memory_order_acquire) != seen; };
  const std::int64_t start = wait_ == WaitPolicy::kAuto ? now_ns() : 0;
  if (wait_ == WaitPolicy::kAuto) check_preempted(preemptions, start, false);
  bool descheduled = false;
  if (!spin_until(fresh, wait_, wait_ == WaitPolicy::kAuto ? spin_budget_ns(start) : 0, descheduled)) {
    if (wait_ == WaitPolicy::kAuto) {
      const std::int64_t t = now_ns();
      if (descheduled) note_preempted(t);
      check_preempted(preemptions, t, true);
    }
    sleepers_.fetch_add(1);  // seq_cst, against launch()'s publication
    while (epoch_.load() == seen) futex_wait(epoch_, seen);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    if (wait_ == WaitPolicy::kAuto) {
      const std::int64_t t = now_ns();
      note_slept(t - start, t);
    }
  }
  return epoch_.load(std::memory_order_acquire);
}

void ThreadPool::worker(int index) {
  std::uint32_t seen = 0;
  Preemptions preemptions;
  if (wait_ == WaitPolicy::kAuto) preemptions = Preemptions{involuntary_switches(), now_ns()};
  for (;;) {
    seen = wait_for_job(seen, preemptions);
    if (stop_.load()) return;
    work_on(seen, index);
  }
}

}  // namespace plexus
