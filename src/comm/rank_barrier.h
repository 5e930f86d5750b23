// The meeting point of ranks that are threads of one process: arrive() returns once every rank
// has arrived, or throws RuntimeError(why) for every rank once one called abort(why).
//
// Ranks that read each other's memory after an arrival arrive through a Reading guard, which
// ends that rank's reading when it goes out of scope (also when the reading throws). A rank that
// an abort ends waits, before it throws, until no rank is reading: otherwise it could leave and
// free its buffer while another rank still reads it.
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
  void arrive() { arrive(false); }
  // Wakes every rank waiting in (or later entering) arrive() with RuntimeError(why); the first
  // reason stays.
  void abort(const std::string& why);
  // Runs f() under the barrier's lock (state the ranks share between two arrivals).
  template <class F>
  void locked(F f) {
    std::lock_guard lock(mutex_);
    f();
  }

  // A reading phase: arrive() meets the other ranks, which all read each other's memory from
  // then until their guards end.
  class Reading {
   public:
    explicit Reading(RankBarrier& b) : b_(b) {}
    ~Reading() {
      if (open_) b_.done_reading();
    }
    Reading(const Reading&) = delete;
    Reading& operator=(const Reading&) = delete;
    void arrive() {
      b_.arrive(true);
      open_ = true;
    }

   private:
    RankBarrier& b_;
    bool open_ = false;
  };

 private:
  void arrive(bool to_read);
  void done_reading();
  [[noreturn]] void throw_aborted(std::unique_lock<std::mutex>& lock);

  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  int readers_ = 0;      // ranks in a reading phase
  std::string aborted_;  // non-empty once abort() was called
};

}  // namespace plexus
