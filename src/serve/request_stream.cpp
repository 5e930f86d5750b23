// Events of one request from the scheduler thread to the API layer.
#include "serve/request_stream.h"

namespace plexus {

std::optional<RequestStream::Event> EventStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (delivered_) return std::nullopt;
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event event = std::move(events_.front());
  events_.pop_front();
  if (std::holds_alternative<FinishEvent>(event)) delivered_ = true;
  return event;
}

void EventStream::cancel() {
  if (cancelled_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
  }
  if (on_cancel_) on_cancel_();
}

void EventStream::push(TokenEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    events_.emplace_back(std::move(event));
  }
  cv_.notify_all();
}

void EventStream::finish(FinishEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    events_.emplace_back(std::move(event));
  }
  cv_.notify_all();
}

}  // namespace plexus
