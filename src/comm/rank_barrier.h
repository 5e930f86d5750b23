// The meeting point of ranks that are threads of one process: arrive() returns once every rank
// has arrived, or throws RuntimeError(why) for every rank once one called abort(why).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace plexus {

class RankBarrier {
 public:
  explicit RankBarrier(int size) : size_(size) {}
  RankBarrier(const RankBarrier&) = delete;
  RankBarrier& operator=(const RankBarrier&) = delete;

  // Returns once all size ranks have arrived (or throws after abort()).
  void arrive();
  // Wakes every rank waiting in (or later entering) arrive() with RuntimeError(why); the first
  // reason stays.
  void abort(const std::string& why);
  // Runs f() under the barrier's lock (state the ranks share between two arrivals).
  template <class F>
  void locked(F f) {
    std::lock_guard lock(mutex_);
    f();
  }

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::string aborted_;  // non-empty once abort() was called
};

}  // namespace plexus
