// The scheduler tests' model, Runner decorator, gate and stream reader.
#include "serve_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "model/make_model.h"

namespace plexus::testing {

namespace {
const std::string& model_dir() {
  static TempDir dir("serve_scheduler");
  static const bool written = [] {
    MakeModelOptions mo;
    mo.seed = 19;
    mo.std = 0.08;
    mo.vocab_size = kVocab;
    write_random_model(dir.path(), mo);
    return true;
  }();
  (void)written;
  return dir.path();
}
}  // namespace

TinyModel::TinyModel(std::int64_t max_batch_tokens, std::int64_t max_context) {
  EngineOptions eo;
  eo.threads = 1;
  eo.max_batch_tokens = max_batch_tokens;
  eo.max_context = max_context;
  engine = std::make_unique<Engine>(model_dir(), eo);
  runner = std::make_unique<EngineRunner>(*engine);
}

int RecordingRunner::open_sequence(std::int64_t capacity) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int>(capacity_.size()) >= max_slots) throw RuntimeError("out of memory for the KV cache (test)");
  }
  const int slot = inner_.open_sequence(capacity);
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_[slot] = capacity;
  max_open_ = std::max(max_open_, static_cast<int>(capacity_.size()));
  return slot;
}

void RecordingRunner::close_sequence(int slot) {
  inner_.close_sequence(slot);
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_.erase(slot);
}

void RecordingRunner::copy_sequence(int from, int to, std::int64_t tokens) {
  inner_.copy_sequence(from, to, tokens);
  std::lock_guard<std::mutex> lock(mutex_);
  copies_.push_back({from, to, tokens});
}

std::vector<RecordingRunner::Copy> RecordingRunner::copies() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return copies_;
}

void RecordingRunner::forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  int index = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<ForwardToken> tokens;
    for (std::size_t i = 0; i < batch.ids.size(); ++i) tokens.push_back({batch.seq[i], batch.pos[i], capacity_[batch.seq[i]]});
    index = static_cast<int>(forwards_.size());
    forwards_.push_back(std::move(tokens));
  }
  if (before_forward) before_forward(index);
  inner_.forward(batch, rows, logits);
}

std::vector<std::vector<ForwardToken>> RecordingRunner::forwards() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return forwards_;
}

int RecordingRunner::max_open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_open_;
}

void Gate::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, std::chrono::seconds(30), [&] { return open_; });  // a failed test must not hang
}

void Gate::open() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
  }
  cv_.notify_all();
}

std::vector<std::int32_t> Finished::ids() const {
  std::vector<std::int32_t> out;
  for (const TokenEvent& t : tokens) {
    if (t.prompt_position < 0) out.push_back(t.id);
  }
  return out;
}

Finished read_all(RequestStream& stream) {
  Finished f;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    auto event = stream.next(std::chrono::milliseconds(100));
    if (!event) continue;
    if (auto* t = std::get_if<TokenEvent>(&*event)) {
      f.tokens.push_back(*t);
      continue;
    }
    f.finish = std::get<FinishEvent>(*event);
    EXPECT_FALSE(stream.next(std::chrono::milliseconds(0)).has_value()) << "an event after the finish";
    return f;
  }
  ADD_FAILURE() << "no FinishEvent within a minute";
  f.finish.reason = FinishReason::kError;
  f.finish.error = "timeout in the test";
  return f;
}

std::vector<Finished> read_choices(RequestStream& stream, int n) {
  std::vector<Finished> out(static_cast<std::size_t>(n));
  int finished = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (finished < n && std::chrono::steady_clock::now() < deadline) {
    auto event = stream.next(std::chrono::milliseconds(100));
    if (!event) continue;
    if (auto* t = std::get_if<TokenEvent>(&*event)) {
      EXPECT_TRUE(t->index >= 0 && t->index < n) << "token of choice " << t->index;
      if (t->index >= 0 && t->index < n) out[static_cast<std::size_t>(t->index)].tokens.push_back(*t);
      continue;
    }
    const FinishEvent& f = std::get<FinishEvent>(*event);
    EXPECT_TRUE(f.index >= 0 && f.index < n) << "finish of choice " << f.index;
    if (f.index < 0 || f.index >= n) continue;
    out[static_cast<std::size_t>(f.index)].finish = f;
    ++finished;
  }
  EXPECT_EQ(finished, n) << "not every choice finished within a minute";
  EXPECT_FALSE(stream.next(std::chrono::milliseconds(0)).has_value()) << "an event after the last finish";
  return out;
}

bool wait_for_stats(const Scheduler& scheduler, const std::function<bool(const SchedulerStats&)>& pred) {
  for (int i = 0; i < 6000; ++i) {
    if (pred(scheduler.stats())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace plexus::testing
