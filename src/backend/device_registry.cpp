// Registry bookkeeping and the factories for host-only and virtual-device registries.
#include "backend/device_registry.h"

#include <cassert>
#include <thread>

#include "backend/cpu/cpu_device.h"
#include "backend/host_info.h"
#include "core/error.h"

namespace plexus {

void DeviceRegistry::add_accelerator(std::unique_ptr<Device> device) {
  assert(device->ordinal() == accelerator_count());
  accelerators_.push_back(std::move(device));
}

void DeviceRegistry::set_host(std::unique_ptr<Device> device) { host_ = std::move(device); }

Device& DeviceRegistry::accelerator(int ordinal) const {
  if (ordinal < 0 || ordinal >= accelerator_count()) {
    const std::string valid = accelerators_.empty()
                                  ? "there are no accelerator devices (use --virtual-devices N to split the CPU)"
                                  : "valid devices are 0.." + std::to_string(accelerator_count() - 1);
    throw InputError("device " + std::to_string(ordinal) + " does not exist: " + valid);
  }
  return *accelerators_[static_cast<std::size_t>(ordinal)];
}

std::vector<Device*> DeviceRegistry::accelerators() const {
  std::vector<Device*> out;
  for (const auto& d : accelerators_) out.push_back(d.get());
  return out;
}

Device& DeviceRegistry::host() const {
  assert(host_ != nullptr);
  return *host_;
}

void DeviceRegistry::synchronize_all() const {
  for (const auto& d : accelerators_) d->synchronize();
  if (host_) host_->synchronize();
}

namespace {
int hardware_threads() {
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return hw > 0 ? hw : 1;
}
}  // namespace

DeviceRegistry make_host_registry() {
  const HostInfo host = read_host_info();
  DeviceRegistry registry;
  registry.set_host(std::make_unique<CpuDevice>(DeviceKind::kCpu, -1, host.memory_available_bytes, hardware_threads()));
  return registry;
}

DeviceRegistry make_virtual_devices(int n, std::uint64_t per_device_budget_bytes) {
  if (n < 1) throw InputError("--virtual-devices must be at least 1, got " + std::to_string(n));
  DeviceRegistry registry = make_host_registry();
  const int threads = hardware_threads() / n;
  for (int i = 0; i < n; ++i)
    registry.add_accelerator(std::make_unique<CpuDevice>(DeviceKind::kVirtual, i, per_device_budget_bytes, threads));
  return registry;
}

DeviceRegistry make_virtual_devices_sharing(int n, std::uint64_t total_budget_bytes) {
  if (n < 1) throw InputError("--virtual-devices must be at least 1, got " + std::to_string(n));
  return make_virtual_devices(n, total_budget_bytes / static_cast<std::uint64_t>(n));
}

}  // namespace plexus
