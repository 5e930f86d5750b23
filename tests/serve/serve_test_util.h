// Helpers of the scheduler tests: a tiny random model with its runner, Runner decorators that
// record each forward or hold it at a gate, and reading a request's stream to its end.
#pragma once
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/engine_runner.h"
#include "serve/scheduler.h"
#include "test_util.h"

namespace plexus::testing {

inline constexpr std::int64_t kVocab = 300;

// A tiny random model (written once per process) and an engine on it.
struct TinyModel {
  explicit TinyModel(std::int64_t max_batch_tokens = 16, std::int64_t max_context = 256);
  std::unique_ptr<Engine> engine;
  std::unique_ptr<EngineRunner> runner;
};

// One token of a recorded forward.
struct ForwardToken {
  int slot;
  std::int32_t pos;
  std::int64_t capacity;  // of its sequence when opened
};

// Passes every call to `inner`, recording each forward's tokens; `before_forward` (may be
// empty) runs first, e.g. to hold the forward at a gate or to throw.
class RecordingRunner : public Runner {
 public:
  explicit RecordingRunner(Runner& inner) : inner_(inner) {}
  const ModelConfig& config() const override { return inner_.config(); }
  std::int64_t vocab_size() const override { return inner_.vocab_size(); }
  std::int64_t max_context() const override { return inner_.max_context(); }
  std::int64_t max_batch_tokens() const override { return inner_.max_batch_tokens(); }
  int open_sequence(std::int64_t capacity) override;
  void close_sequence(int slot) override;
  void copy_sequence(int from, int to, std::int64_t tokens) override;
  void forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) override;

  std::vector<std::vector<ForwardToken>> forwards() const;
  struct Copy {
    int from, to;
    std::int64_t tokens;
  };
  std::vector<Copy> copies() const;
  int max_open() const;
  std::function<void(int forward_index)> before_forward;
  int max_slots = 1 << 30;  // open_sequence beyond it: RuntimeError, as when KV memory runs out

 private:
  Runner& inner_;
  mutable std::mutex mutex_;
  std::vector<std::vector<ForwardToken>> forwards_;
  std::vector<Copy> copies_;
  std::map<int, std::int64_t> capacity_;  // open slots
  int max_open_ = 0;
};

// Holds callers of wait() until open() (30 s at most).
class Gate {
 public:
  void wait();
  void open();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

struct Finished {
  std::vector<TokenEvent> tokens;  // the prompt's log-probabilities (prompt_position >= 1) included
  FinishEvent finish;
  std::vector<std::int32_t> ids() const;  // the generated tokens' ids
};

// Reads the stream to its FinishEvent (fails the test after a minute without one).
Finished read_all(RequestStream& stream);
// Reads a stream of `n` choices to the FinishEvent of each: per choice, its events.
std::vector<Finished> read_choices(RequestStream& stream, int n);

// Waits (up to a minute) until pred(scheduler.stats()) holds; false on timeout.
bool wait_for_stats(const Scheduler& scheduler, const std::function<bool(const SchedulerStats&)>& pred);

}  // namespace plexus::testing
