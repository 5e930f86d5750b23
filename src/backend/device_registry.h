// Owns the devices of one run: accelerators numbered 0..N-1 (virtual CPU devices today, GPUs
// later) and the host ("cpu"). Passed explicitly to whoever needs devices; no globals.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/device.h"

namespace plexus {

class DeviceRegistry {
 public:
  DeviceRegistry() = default;
  DeviceRegistry(DeviceRegistry&&) = default;
  DeviceRegistry& operator=(DeviceRegistry&&) = default;

  // Adds an accelerator; its ordinal must equal the number of accelerators so far.
  void add_accelerator(std::unique_ptr<Device> device);
  void set_host(std::unique_ptr<Device> device);

  int accelerator_count() const { return static_cast<int>(accelerators_.size()); }
  // Accelerator by ordinal; throws InputError listing the valid ordinals when out of range.
  Device& accelerator(int ordinal) const;
  std::vector<Device*> accelerators() const;
  bool has_host() const { return host_ != nullptr; }
  Device& host() const;  // asserts has_host()

  // Waits for every device's queue.
  void synchronize_all() const;

 private:
  std::vector<std::unique_ptr<Device>> accelerators_;
  std::unique_ptr<Device> host_;
};

// The host alone: one "cpu" device with the host's available memory and all its threads.
DeviceRegistry make_host_registry();

// The host split into n virtual devices 0..n-1, each with `per_device_budget_bytes` and
// hardware_threads/n threads (at least 1), plus the host device. n must be >= 1.
DeviceRegistry make_virtual_devices(int n, std::uint64_t per_device_budget_bytes);
// Same, with `total_budget_bytes` split evenly.
DeviceRegistry make_virtual_devices_sharing(int n, std::uint64_t total_budget_bytes);

}  // namespace plexus
