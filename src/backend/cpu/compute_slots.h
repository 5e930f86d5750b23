// A run's thread budget shared by its CPU devices: a task that computes on k threads holds k of
// the N slots while it runs, so devices side by side never compute on more than N threads together.
#pragma once
#include <condition_variable>
#include <mutex>

namespace plexus {

class ComputeSlots {
 public:
  explicit ComputeSlots(int slots);
  int size() const { return size_; }
  // Blocks until k slots (at most size()) are free, and takes them.
  void acquire(int k);
  void release(int k);

 private:
  const int size_;
  int free_;
  std::mutex mutex_;
  std::condition_variable freed_;
};

}  // namespace plexus
