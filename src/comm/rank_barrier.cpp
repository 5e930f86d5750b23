// A generation-counted barrier with abort.
#include "comm/rank_barrier.h"

#include "core/error.h"

namespace plexus {

void RankBarrier::abort(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (aborted_.empty()) aborted_ = why.empty() ? "a tensor-parallel rank failed" : why;
  all_arrived_.notify_all();
}

void RankBarrier::arrive() {
  std::unique_lock lock(mutex_);
  if (!aborted_.empty()) throw RuntimeError(aborted_);
  const std::uint64_t generation = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    all_arrived_.notify_all();
    return;
  }
  all_arrived_.wait(lock, [&] { return generation_ != generation || !aborted_.empty(); });
  if (generation_ == generation) throw RuntimeError(aborted_);
}

}  // namespace plexus
