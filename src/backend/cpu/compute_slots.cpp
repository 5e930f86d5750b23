// Counting slots with waits, for a run's thread budget.
#include "backend/cpu/compute_slots.h"

#include <algorithm>

namespace plexus {

ComputeSlots::ComputeSlots(int slots) : size_(std::max(1, slots)), free_(size_) {}

void ComputeSlots::acquire(int k) {
  k = std::clamp(k, 1, size_);
  std::unique_lock<std::mutex> lock(mutex_);
  freed_.wait(lock, [&] { return free_ >= k; });
  free_ -= k;
}

void ComputeSlots::release(int k) {
  k = std::clamp(k, 1, size_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_ += k;
  }
  freed_.notify_all();
}

}  // namespace plexus
