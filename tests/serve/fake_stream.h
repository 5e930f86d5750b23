// A RequestStream for tests of the API and HTTP layers without a scheduler: it hands out
// scripted events (tokens, then the finish), optionally one every `delay`, and records cancel().
#pragma once
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/scheduler.h"

namespace plexus::testing {

class FakeStream : public RequestStream {
 public:
  FakeStream(const std::vector<std::int32_t>& ids, FinishReason reason, std::chrono::milliseconds delay = {})
      : delay_(delay) {
    for (std::int32_t id : ids) {
      TokenEvent t;
      t.id = id;
      t.logprob = -0.5f;
      t.top = {{id, -0.5f}, {id == 0 ? 1 : 0, -1.5f}};
      events_.emplace_back(t);
    }
    FinishEvent f;
    f.reason = reason;
    f.prompt_tokens = 3;
    f.completion_tokens = static_cast<std::int64_t>(ids.size());
    f.time_s = 0.5;
    f.ttft_s = 0.1;
    f.energy_j = 2.0;
    events_.emplace_back(f);
  }
  std::optional<Event> next(std::chrono::milliseconds timeout) override {
    std::lock_guard lock(mutex_);
    if (events_.empty()) return std::nullopt;
    if (cancelled_ && !std::holds_alternative<FinishEvent>(events_.back())) return std::nullopt;
    if (cancelled_) {
      // A cancelled request ends at the next step: its finish event, reason kCancelled.
      FinishEvent f = std::get<FinishEvent>(events_.back());
      f.reason = FinishReason::kCancelled;
      events_.clear();
      return f;
    }
    if (delay_.count() > 0) std::this_thread::sleep_for(std::min(delay_, timeout));
    Event e = events_.front();
    events_.pop_front();
    return e;
  }
  void cancel() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  bool cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }

 private:
  mutable std::mutex mutex_;
  std::deque<Event> events_;
  std::chrono::milliseconds delay_;
  bool cancelled_ = false;
};

}  // namespace plexus::testing
