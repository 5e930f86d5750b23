// Double-buffered weight streaming on a copy thread, ordered with events.
#include "exec/weight_streamer.h"

#include <algorithm>

#include "core/timer.h"
#include "exec/weight_store.h"

namespace plexus {

WeightStreamer::WeightStreamer(DeviceMemory& mem, std::int64_t layer_slot_bytes, int layer_slots, std::int64_t head_slot_bytes)
    : device_(mem.device()), n_slots_(std::clamp(layer_slots, 1, 2)), queue_("stream:" + mem.device().name()) {
  for (int i = 0; i < n_slots_; ++i) {
    if (layer_slot_bytes > 0 && layer_slots > 0) {
      slots_[i] = mem.allocate(static_cast<std::size_t>(layer_slot_bytes), "a weight-streaming slot");
    }
  }
  if (head_slot_bytes > 0) head_slot_ = mem.allocate(static_cast<std::size_t>(head_slot_bytes), "the lm_head streaming slot");
  for (Event& e : free_) e.mark_complete();
  head_free_.mark_complete();
}

WeightStreamer::Staged WeightStreamer::stage_layer(const LayerWeights& src) {
  const int slot = next_;
  next_ = (next_ + 1) % n_slots_;
  const Event free = free_[slot], ready;
  queue_.enqueue([this, &src, slot, free] {
    free.wait();  // the compute that last read this slot has finished
    Timer t;
    staged_[slot] = src;  // the small vectors stay src's: resident on this device
    WeightStore::copy_packed(src, device_, slots_[slot], staged_[slot]);
    copy_s_ += t.seconds();
    bytes_ += WeightStore::packed_bytes(src);
  });
  queue_.enqueue([ready] { ready.mark_complete(); }, /*always_run=*/true);
  return {&staged_[slot], ready, slot};
}

WeightStreamer::Staged WeightStreamer::stage_head(const WeightMatrix& src) {
  const Event free = head_free_, ready;
  queue_.enqueue([this, &src, free] {
    free.wait();
    Timer t;
    device_.copy_from_host(head_slot_, 0, src.data, static_cast<std::size_t>(src.bytes()));
    staged_head_ = src;
    staged_head_.data = head_slot_.data();
    copy_s_ += t.seconds();
    bytes_ += src.bytes();
  });
  queue_.enqueue([ready] { ready.mark_complete(); }, /*always_run=*/true);
  return {&staged_head_, ready, -1};
}

void WeightStreamer::release(int slot, const Event& done) {
  if (slot < 0) head_free_ = done;
  else free_[slot] = done;
}

}  // namespace plexus
