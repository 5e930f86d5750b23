// Events of one request from the scheduler thread to the API layer.
#include "serve/request_stream.h"

namespace plexus {

std::optional<RequestStream::Event> EventStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (delivered_ == choices_) return std::nullopt;
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event event = std::move(events_.front());
  events_.pop_front();
  if (std::holds_alternative<FinishEvent>(event)) ++delivered_;
  return event;
}

void EventStream::cancel() {
  if (cancelled_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_ == choices_) return;
  }
  if (on_cancel_) on_cancel_();
}

void EventStream::cancel_choice(int index) {
  if (index < 0 || index >= choices_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto i = static_cast<std::size_t>(index);
    if (choice_cancelled_[i] || choice_finished_[i]) return;
    choice_cancelled_[i] = true;
  }
  if (on_cancel_) on_cancel_();
}

bool EventStream::cancelled(int index) const {
  if (cancelled_.load()) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  return index >= 0 && index < choices_ && choice_cancelled_[static_cast<std::size_t>(index)];
}

void EventStream::push(TokenEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (event.index < 0 || event.index >= choices_ || choice_finished_[static_cast<std::size_t>(event.index)]) return;
    events_.emplace_back(std::move(event));
  }
  cv_.notify_all();
}

void EventStream::finish(FinishEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (event.index < 0 || event.index >= choices_ || choice_finished_[static_cast<std::size_t>(event.index)]) return;
    choice_finished_[static_cast<std::size_t>(event.index)] = true;
    ++finished_;
    events_.emplace_back(std::move(event));
  }
  cv_.notify_all();
}

}  // namespace plexus
