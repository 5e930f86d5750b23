// Dynamic work queue with retries on other replicas and replica removal.
#include "batch/work_queue.h"

#include <algorithm>
#include <cassert>

namespace plexus::batch {

WorkQueue::WorkQueue(std::vector<std::size_t> pending, const QueueOptions& options)
    : options_(options),
      strikes_(static_cast<std::size_t>(std::max(0, options.replicas)), 0),
      live_(static_cast<std::size_t>(std::max(0, options.replicas)), true) {
  for (std::size_t i : pending) queued_.push_back(Item{i, 0, {}, {}});
  if (options_.replicas < 1) fail_all_queued("no replica to run on");
}

bool WorkQueue::fits(const Item& item, int replica) const {
  if (!item.failed_on.count(replica)) return true;
  // Back on a replica it failed on only when every live replica has failed it.
  for (std::size_t r = 0; r < live_.size(); ++r) {
    if (live_[r] && !item.failed_on.count(static_cast<int>(r))) return false;
  }
  return true;
}

WorkQueue::Take WorkQueue::try_take(int replica, std::size_t max_n, std::vector<std::size_t>* out) {
  std::lock_guard lock(mutex_);
  return take_locked(replica, max_n, out);
}

WorkQueue::Take WorkQueue::take_locked(int replica, std::size_t max_n, std::vector<std::size_t>* out) {
  out->clear();
  assert(replica >= 0 && static_cast<std::size_t>(replica) < live_.size());
  if (!live_[static_cast<std::size_t>(replica)]) return Take::kDone;
  if (queued_.empty() && running_.empty()) return Take::kDone;
  const std::size_t n_live = static_cast<std::size_t>(std::count(live_.begin(), live_.end(), true));
  // Spread what is left over the live replicas, so the last requests do not all land on one.
  const std::size_t share = (queued_.size() + n_live - 1) / std::max<std::size_t>(1, n_live);
  const std::size_t n = std::max<std::size_t>(1, std::min(max_n, share));
  for (auto it = queued_.begin(); it != queued_.end() && out->size() < n;) {
    if (!fits(*it, replica)) {
      ++it;
      continue;
    }
    out->push_back(it->index);
    running_.emplace(it->index, std::move(*it));
    it = queued_.erase(it);
  }
  return out->empty() ? Take::kWait : Take::kWork;
}

std::vector<std::size_t> WorkQueue::take(int replica, std::size_t max_n) {
  std::vector<std::size_t> out;
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return take_locked(replica, max_n, &out) != Take::kWait; });
  return out;
}

void WorkQueue::succeeded(int replica, std::size_t index) {
  {
    std::lock_guard lock(mutex_);
    running_.erase(index);
    strikes_[static_cast<std::size_t>(replica)] = 0;
  }
  changed_.notify_all();
}

bool WorkQueue::failed(int replica, std::size_t index, const std::string& reason, bool permanent) {
  bool requeued = false;
  {
    std::lock_guard lock(mutex_);
    auto it = running_.find(index);
    assert(it != running_.end());
    Item item = std::move(it->second);
    running_.erase(it);
    ++item.attempts;
    item.failed_on.insert(replica);
    item.last_error = reason;
    const std::size_t r = static_cast<std::size_t>(replica);
    // Taken out after too many failures in a row, unless it is the last one: then each request
    // keeps its own tries and fails with its own reason.
    const auto n_live = std::count(live_.begin(), live_.end(), true);
    if (!permanent && ++strikes_[r] >= options_.replica_strikes && live_[r] && n_live > 1) live_[r] = false;
    const bool any_live = std::count(live_.begin(), live_.end(), true) > 0;
    if (!permanent && item.attempts <= options_.max_retries && any_live) {
      ++retries_;
      queued_.push_back(std::move(item));
      requeued = true;
    } else {
      failures_.push_back({item.index, item.last_error, item.attempts});
    }
    if (!any_live) fail_all_queued("no replica left (last error: " + reason + ")");
  }
  changed_.notify_all();
  return requeued;
}

void WorkQueue::remove_replica(int replica, const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    live_[static_cast<std::size_t>(replica)] = false;
    if (std::count(live_.begin(), live_.end(), true) == 0) fail_all_queued("no replica left (" + reason + ")");
  }
  changed_.notify_all();
}

void WorkQueue::cancel() {
  {
    std::lock_guard lock(mutex_);
    std::fill(live_.begin(), live_.end(), false);
    queued_.clear();
    running_.clear();
  }
  changed_.notify_all();
}

void WorkQueue::fail_all_queued(const std::string& reason) {
  for (Item& item : queued_) {
    failures_.push_back({item.index, item.last_error.empty() ? reason : item.last_error + "; " + reason, item.attempts});
  }
  queued_.clear();
}

std::vector<FinalFailure> WorkQueue::drain_failures() {
  std::lock_guard lock(mutex_);
  std::vector<FinalFailure> out;
  out.swap(failures_);
  return out;
}

bool WorkQueue::live(int replica) const {
  std::lock_guard lock(mutex_);
  return live_[static_cast<std::size_t>(replica)];
}

std::vector<int> WorkQueue::removed() const {
  std::lock_guard lock(mutex_);
  std::vector<int> out;
  for (std::size_t r = 0; r < live_.size(); ++r) {
    if (!live_[r]) out.push_back(static_cast<int>(r));
  }
  return out;
}

std::int64_t WorkQueue::retries() const {
  std::lock_guard lock(mutex_);
  return retries_;
}

bool WorkQueue::finished() const {
  std::lock_guard lock(mutex_);
  return queued_.empty() && running_.empty();
}

}  // namespace plexus::batch
