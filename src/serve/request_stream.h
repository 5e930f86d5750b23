// The scheduler's side of a RequestStream (serve/scheduler.h): a thread-safe queue of events that
// the scheduler thread pushes and the API layer takes, and the cancel flags (the request's, each
// choice's) the scheduler polls. It ends after the FinishEvent of every choice.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "serve/scheduler.h"

namespace plexus {

class EventStream : public RequestStream {
 public:
  // `on_cancel` wakes the scheduler (called outside the stream's lock); `choices` >= 1.
  explicit EventStream(std::function<void()> on_cancel, int choices = 1)
      : on_cancel_(std::move(on_cancel)), choices_(choices), choice_finished_(static_cast<std::size_t>(choices), false),
        choice_cancelled_(static_cast<std::size_t>(choices), false) {}

  std::optional<Event> next(std::chrono::milliseconds timeout) override;
  void cancel() override;
  void cancel_choice(int index) override;

  void push(TokenEvent event);     // ignored after its choice's finish
  void finish(FinishEvent event);  // its choice's last event
  // The request, or its choice `index`, was cancelled.
  bool cancelled(int index) const;

 private:
  std::function<void()> on_cancel_;
  const int choices_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  int finished_ = 0;   // choices whose FinishEvent was pushed
  int delivered_ = 0;  // ... and taken
  std::vector<bool> choice_finished_, choice_cancelled_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace plexus
