// The scheduler's side of a RequestStream (serve/scheduler.h): a thread-safe queue of events that
// the scheduler thread pushes and the API layer takes, and the cancel flag the scheduler polls.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

#include "serve/scheduler.h"

namespace plexus {

class EventStream : public RequestStream {
 public:
  // `on_cancel` wakes the scheduler (called outside the stream's lock).
  explicit EventStream(std::function<void()> on_cancel) : on_cancel_(std::move(on_cancel)) {}

  std::optional<Event> next(std::chrono::milliseconds timeout) override;
  void cancel() override;

  void push(TokenEvent event);
  void finish(FinishEvent event);  // the last event: later pushes are ignored
  bool cancelled() const { return cancelled_.load(); }

 private:
  std::function<void()> on_cancel_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  bool finished_ = false;   // the FinishEvent was pushed
  bool delivered_ = false;  // ... and taken
  std::atomic<bool> cancelled_{false};
};

}  // namespace plexus
