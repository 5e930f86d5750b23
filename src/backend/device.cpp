// Buffer ownership and events, shared by every backend.
#include "backend/device.h"

#include <utility>

namespace plexus {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCuda: return "cuda";
    case DeviceKind::kRocm: return "rocm";
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kVirtual: return "virtual";
  }
  return "unknown";
}

void Buffer::reset() {
  if (device_ != nullptr && data_ != nullptr) device_->release(data_, size_);
  device_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

void Buffer::swap(Buffer& other) noexcept {
  std::swap(device_, other.device_);
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
}

Event::Event() : state_(std::make_shared<State>()) {}

bool Event::query() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done;
}

void Event::wait() const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done; });
}

void Event::mark_complete() const {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->done = true;
  }
  state_->done_cv.notify_all();
}

void enqueue_copy(Buffer& dst, std::size_t dst_offset, const Buffer& src, std::size_t src_offset,
                  std::size_t bytes) {
  Device* device = dst.device();
  Buffer* dst_ptr = &dst;
  const Buffer* src_ptr = &src;
  device->enqueue([device, dst_ptr, dst_offset, src_ptr, src_offset, bytes] {
    device->copy_from_device(*dst_ptr, dst_offset, *src_ptr, src_offset, bytes);
  });
}

}  // namespace plexus
