// Stand-in for serve/scheduler.cpp and serve/energy_ledger.cpp until the continuous-batching
// scheduler is in this tree: requests run one at a time, in arrival order, and report no
// energy. src/serve/CMakeLists.txt builds this file only when scheduler.cpp is absent.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/timer.h"
#include "serve/energy_ledger.h"
#include "serve/scheduler.h"

namespace plexus {

struct EnergyLedger::Impl {
  Timer clock;
};
EnergyLedger::EnergyLedger(std::vector<std::unique_ptr<MetricSource>>, double) : impl_(std::make_unique<Impl>()) {}
EnergyLedger::~EnergyLedger() = default;
double EnergyLedger::now_s() const { return impl_->clock.seconds(); }
void EnergyLedger::record_step(double, double, std::span<const std::pair<std::uint64_t, std::int64_t>>) {}
std::optional<double> EnergyLedger::take_request_energy(std::uint64_t) { return std::nullopt; }
std::vector<DeviceEnergy> EnergyLedger::devices() const { return {}; }
std::optional<double> EnergyLedger::measured_j() const { return std::nullopt; }
std::optional<double> EnergyLedger::attributed_j() const { return std::nullopt; }

namespace {

class QueueStream : public RequestStream {
 public:
  std::optional<Event> next(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    Event e = events_.front();
    events_.pop_front();
    return e;
  }
  void cancel() override { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  void push(Event e) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(std::move(e));
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;
  std::atomic<bool> cancelled_{false};
};

// The chosen token with its log-probability and the top k.
TokenEvent choose(Sampler& sampler, std::vector<float>& logits, int top_logprobs) {
  TokenEvent t;
  if (top_logprobs < 0) {
    t.id = sampler.sample(logits.data());
    return t;
  }
  const float peak = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x - peak));
  const double log_z = peak + std::log(sum);
  std::vector<std::int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  const auto k = std::min<std::size_t>(static_cast<std::size_t>(top_logprobs), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::int32_t a, std::int32_t b) { return logits[a] > logits[b]; });
  for (std::size_t i = 0; i < k; ++i) t.top.emplace_back(order[i], static_cast<float>(logits[order[i]] - log_z));
  std::vector<float> scratch = logits;
  t.id = sampler.sample(scratch.data());
  t.logprob = static_cast<float>(logits[t.id] - log_z);
  return t;
}

}  // namespace

struct Scheduler::Impl {
  Runner& runner;
  SchedulerOptions options;
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::pair<ServeRequest, std::shared_ptr<QueueStream>>> waiting;
  bool stopping = false;
  std::thread thread;
  std::atomic<int> running{0};
  std::atomic<std::int64_t> finished{0}, cancelled{0}, failed{0}, prompt_tokens{0}, generated_tokens{0};

  Impl(Runner& r, const SchedulerOptions& o) : runner(r), options(o) {}

  void run(const ServeRequest& r, QueueStream& stream) {
    Timer timer;
    FinishEvent f;
    f.prompt_tokens = static_cast<std::int64_t>(r.prompt.size());
    f.reason = FinishReason::kLength;
    try {
      const int slot = runner.open_sequence(f.prompt_tokens + r.max_tokens);
      std::vector<float> logits(static_cast<std::size_t>(runner.vocab_size()));  // (vocab)
      Sampler sampler(r.sampling, runner.vocab_size());
      std::vector<std::int32_t> ids = r.prompt;
      std::size_t done = 0;
      for (std::int64_t k = 0; k < r.max_tokens; ++k) {
        if (stream.cancelled()) {
          f.reason = FinishReason::kCancelled;
          break;
        }
        while (done < ids.size()) {  // the prompt in chunks of max_batch_tokens, then one token
          const std::size_t n = std::min<std::size_t>(ids.size() - done, static_cast<std::size_t>(runner.max_batch_tokens()));
          std::vector<std::int32_t> pos(n);
          std::iota(pos.begin(), pos.end(), static_cast<std::int32_t>(done));
          const std::vector<int> seq(n, slot);
          const std::int64_t row = static_cast<std::int64_t>(n) - 1;
          runner.forward(SlotBatch{std::span(ids.data() + done, n), pos, seq}, std::span(&row, 1), logits.data());
          done += n;
        }
        const TokenEvent t = choose(sampler, logits, r.top_logprobs);
        if (k == 0) f.ttft_s = timer.seconds();
        ids.push_back(t.id);
        ++f.completion_tokens;
        stream.push(t);
        if (std::find(r.stop_ids.begin(), r.stop_ids.end(), t.id) != r.stop_ids.end()) {
          f.reason = FinishReason::kStop;
          break;
        }
      }
      runner.close_sequence(slot);
    } catch (const std::exception& e) {
      f.reason = FinishReason::kError;
      f.error = e.what();
    }
    f.time_s = timer.seconds();
    prompt_tokens += f.prompt_tokens;
    generated_tokens += f.completion_tokens;
    (f.reason == FinishReason::kCancelled ? cancelled : f.reason == FinishReason::kError ? failed : finished) += 1;
    stream.push(f);
  }

  void loop() {
    for (;;) {
      std::unique_lock lock(mutex);
      wake.wait(lock, [&] { return stopping || !waiting.empty(); });
      if (waiting.empty()) return;
      auto item = std::move(waiting.front());
      waiting.pop_front();
      lock.unlock();
      running = 1;
      run(item.first, *item.second);
      running = 0;
    }
  }
};

Scheduler::Scheduler(Runner& runner, const SchedulerOptions& options, EnergyLedger*)
    : impl_(std::make_unique<Impl>(runner, options)) {
  impl_->thread = std::thread([this] { impl_->loop(); });
}

Scheduler::~Scheduler() { drain(std::chrono::milliseconds(0)); }

std::shared_ptr<RequestStream> Scheduler::submit(ServeRequest request) {
  if (request.prompt.empty()) throw InputError("the prompt is empty");
  for (std::int32_t id : request.prompt) {
    if (id < 0 || id >= impl_->runner.vocab_size()) throw InputError("token id " + std::to_string(id) + " is outside the vocabulary");
  }
  if (static_cast<std::int64_t>(request.prompt.size()) + request.max_tokens > impl_->runner.max_context()) {
    throw InputError("prompt + max_tokens is beyond the context of " + std::to_string(impl_->runner.max_context()) + " tokens");
  }
  auto stream = std::make_shared<QueueStream>();
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopping) throw ShuttingDown("the server is shutting down");
  if (static_cast<int>(impl_->waiting.size()) >= impl_->options.max_queue) {
    throw QueueFull(std::to_string(impl_->options.max_queue) + " requests already wait");
  }
  impl_->waiting.emplace_back(std::move(request), stream);
  impl_->wake.notify_all();
  return stream;
}

// Waiting requests still run (this stand-in has no cut-off); the thread ends after them.
void Scheduler::drain(std::chrono::milliseconds) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.running = impl_->running;
  {
    std::lock_guard lock(impl_->mutex);
    s.waiting = static_cast<int>(impl_->waiting.size());
  }
  s.finished = impl_->finished;
  s.cancelled = impl_->cancelled;
  s.failed = impl_->failed;
  s.prompt_tokens = impl_->prompt_tokens;
  s.generated_tokens = impl_->generated_tokens;
  return s;
}

const SchedulerOptions& Scheduler::options() const { return impl_->options; }

}  // namespace plexus
