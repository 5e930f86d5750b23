// The executor's allocations on one device, counted so that a run can report its measured peak;
// an allocation over the device's budget is a RuntimeError naming the device, what was being
// placed and the numbers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/device.h"

namespace plexus {

class DeviceMemory {
 public:
  explicit DeviceMemory(Device& device) : device_(&device) {}
  Device& device() const { return *device_; }

  // Allocates `bytes` for `what` ("weights of model.layers.3", "KV cache of a sequence", …).
  Buffer allocate(std::size_t bytes, const std::string& what);
  // Called when a buffer allocated here is dropped.
  void released(std::size_t bytes) { in_use_ -= static_cast<std::int64_t>(bytes); }

  std::int64_t in_use() const { return in_use_; }
  std::int64_t peak() const { return peak_; }

 private:
  Device* device_;
  std::int64_t in_use_ = 0, peak_ = 0;
};

// The counted memory of every device of a run: accelerators by ordinal, and the host.
struct RunMemory {
  std::vector<DeviceMemory> accelerators;
  DeviceMemory host;
  // Accelerator `d`, or the host for d < 0 (kHostDevice).
  DeviceMemory& of(int d) { return d < 0 ? host : accelerators[static_cast<std::size_t>(d)]; }
};

}  // namespace plexus
