// A generation-counted barrier with abort, which lets no rank leave while another reads its memory.
#include "comm/rank_barrier.h"

#include "core/error.h"

namespace plexus {

void RankBarrier::abort(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (aborted_.empty()) aborted_ = why.empty() ? "a tensor-parallel rank failed" : why;
  changed_.notify_all();
}

void RankBarrier::arrive(bool to_read) {
  std::unique_lock lock(mutex_);
  if (!aborted_.empty()) throw_aborted(lock);
  const std::uint64_t generation = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    if (to_read) readers_ = size_;
    changed_.notify_all();
    return;
  }
  changed_.wait(lock, [&] { return generation_ != generation || !aborted_.empty(); });
  if (generation_ == generation) throw_aborted(lock);
}

void RankBarrier::done_reading() {
  std::lock_guard lock(mutex_);
  if (--readers_ == 0) changed_.notify_all();
}

// Every reader ends its phase without waiting on anyone (its next arrival throws, or its guard
// ends), so this wait is short.
void RankBarrier::throw_aborted(std::unique_lock<std::mutex>& lock) {
  changed_.wait(lock, [&] { return readers_ == 0; });
  throw RuntimeError(aborted_);
}

}  // namespace plexus
