// Continuous batching: one thread owns the Runner and, at every step, admits waiting requests
// into the running batch (while sequences, KV-cache budget and the step's token budget allow),
// then runs one forward that carries the running requests' decode tokens and chunks of the new
// requests' prompts together. Each request samples with its own seeded Sampler from its own
// logits row, so its output is the same whatever else shares the batch. A cancelled request's
// slot is freed at the next step. A finished request's prompt KV stays cached for later requests
// that start with the same tokens (prefix caching). The monitor's measured energy of each step is
// shared among the step's requests by their share of its tokens (serve/energy_ledger.h).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <variant>

#include "core/error.h"
#include "runtime/runner.h"
#include "serve/serve_request.h"

namespace plexus {

class EnergyLedger;

struct SchedulerOptions {
  int max_sequences = 8;            // requests in the running batch at most (--max-sequences); <= step_tokens
  int max_queue = 64;               // requests waiting at most; submit() beyond it: QueueFull (--max-queue)
  std::int64_t step_tokens = 0;     // tokens per forward at most; 0: the runner's max_batch_tokens()
  std::int64_t kv_budget_tokens = 0;  // KV-cache tokens of all running requests together (prompt + max_tokens
                                      // each); 0: max_sequences × the runner's max_context()
  // Automatic prefix caching (serve/prefix_cache.h): finished requests' prompt KV kept within the
  // KV budget's unused room for later requests with the same start (--no-prefix-cache: off).
  bool prefix_cache = true;
};

// submit() refused a request because max_queue requests already wait (HTTP 429).
class QueueFull : public RuntimeError {
 public:
  explicit QueueFull(const std::string& message) : RuntimeError(message) {}
};
// submit() after drain() began (HTTP 503).
class ShuttingDown : public RuntimeError {
 public:
  explicit ShuttingDown(const std::string& message) : RuntimeError(message) {}
};

// The two sides of one request: the scheduler thread pushes events, the caller (an HTTP
// handler) takes them in order. Thread-safe.
class RequestStream {
 public:
  using Event = std::variant<TokenEvent, FinishEvent>;
  virtual ~RequestStream() = default;
  // The next event of any choice, waiting up to `timeout`; nullopt on timeout. After every
  // choice's FinishEvent: nullopt at once.
  virtual std::optional<Event> next(std::chrono::milliseconds timeout) = 0;
  // The client went away or needs no more tokens: every choice ends with kCancelled at the next
  // step, its KV cache freed. Harmless after the finish.
  virtual void cancel() = 0;
  // Choice `index` needs no more tokens (a stop string matched in it): it alone ends with
  // kCancelled at the next step. A stream of one choice: cancel().
  virtual void cancel_choice(int index) {
    (void)index;
    cancel();
  }
};

struct SchedulerStats {
  int running = 0, waiting = 0;  // sequences (a request's choices each) / requests
  std::int64_t kv_used_tokens = 0, kv_budget_tokens = 0;  // reserved by running requests / in all
  std::int64_t steps = 0;
  std::int64_t prompt_tokens = 0, generated_tokens = 0;  // processed since start
  std::int64_t finished = 0, cancelled = 0, failed = 0;  // ended kStop or kLength / kCancelled / kError
  // Prefix caching: requests whose prompt started with a cached prefix / with none; the prompt
  // tokens copied instead of run; cached sequences and the KV tokens they hold; evictions.
  std::int64_t prefix_hits = 0, prefix_misses = 0, prefix_hit_tokens = 0;
  std::int64_t prefix_cached_sequences = 0, prefix_cached_tokens = 0, prefix_evictions = 0;
  double busy_s = 0;  // time spent in forwards
  // Host time of the steps: each from admitting requests to its tokens pushed to the streams,
  // less its forward (batching, sampling, logprobs, streaming). host_s / steps: per step.
  double host_s = 0;
};

class Scheduler {
 public:
  // `runner` and `ledger` (may be null: no energy) must outlive the scheduler. Starts its thread.
  // InputError for options out of range (max_sequences or max_queue < 1, step_tokens above the
  // runner's max_batch_tokens(), max_sequences above step_tokens).
  Scheduler(Runner& runner, const SchedulerOptions& options, EnergyLedger* ledger);
  ~Scheduler();  // drain(0) if still running
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request (its choices together: one place in the queue, admitted at once). InputError
  // (HTTP 400) when it can never run: empty prompt, an id outside the vocabulary, negative
  // max_tokens, prompt +
  // max_tokens beyond the runner's context, more choices than max_sequences, the choices'
  // prompt + max_tokens beyond the KV budget; QueueFull (429); ShuttingDown (503).
  std::shared_ptr<RequestStream> submit(ServeRequest request);

  // Stops taking requests; waiting ones end kCancelled; running ones finish, for `limit` at
  // most (then kCancelled); the thread ends. Returns when it has.
  void drain(std::chrono::milliseconds limit);

  SchedulerStats stats() const;
  const SchedulerOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
