// Streams offloaded weights ("cpu" host copies, "disk" mmapped pages) into staging slots on the
// device that computes them, on a copy thread of their own (the device's copy engine): two layer
// slots, so the next offloaded layer is copied while the current one computes (or one, where two
// do not fit: each copy then waits for the previous layer's compute), and one head slot.
#pragma once
#include <cstdint>

#include "backend/cpu/work_queue.h"
#include "backend/device.h"
#include "exec/device_memory.h"
#include "model/llama_family.h"

namespace plexus {

class WeightStreamer {
 public:
  // `layer_slots` (0, 1 or 2) slots of `layer_slot_bytes` and a head slot of `head_slot_bytes`
  // (0: none) on mem's device.
  WeightStreamer(DeviceMemory& mem, std::int64_t layer_slot_bytes, int layer_slots, std::int64_t head_slot_bytes);

  struct Staged {
    const void* weights;  // const LayerWeights* or const WeightMatrix*, valid once `ready` completes
    Event ready;          // the copy has landed
    int slot;             // give back with release() (-1: the head slot)
  };
  // Copies a layer into the next slot once that slot's previous user has released it.
  Staged stage_layer(const LayerWeights& src);
  Staged stage_head(const WeightMatrix& src);
  // The slot may be overwritten once `done` (recorded after the compute that reads it) completes.
  void release(int slot, const Event& done);

  // Waits for the copy thread; rethrows its first error.
  void synchronize() { queue_.synchronize(); }
  // Read after synchronize(): seconds spent copying and bytes copied since construction.
  double copy_seconds() const { return copy_s_; }
  std::int64_t bytes() const { return bytes_; }

 private:
  Device& device_;
  Buffer slots_[2], head_slot_;
  LayerWeights staged_[2];
  WeightMatrix staged_head_;
  Event free_[2], head_free_;
  int next_ = 0;
  int n_slots_ = 2;
  double copy_s_ = 0;      // written by the copy thread only
  std::int64_t bytes_ = 0;  // written by the copy thread only
  WorkQueue queue_;         // last: stops (after running what is queued) before the slots go
};

}  // namespace plexus
