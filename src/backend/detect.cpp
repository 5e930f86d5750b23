// Assembles an Inventory from the GPU probes (or virtual devices) and the host facts.
#include "backend/detect.h"

#include <algorithm>
#include <thread>

#include "backend/nvml/nvml_probe.h"
#include "backend/rocm/rocm_probe.h"

namespace plexus {

Inventory virtual_inventory(int n, std::uint64_t per_device_bytes, const HostInfo& host) {
  Inventory inv;
  inv.host = host;
  inv.virtual_devices = true;
  inv.nvml_status = "skipped: --virtual-devices";
  inv.rocm_status = "skipped: --virtual-devices";
  if (per_device_bytes == 0 && n > 0) per_device_bytes = host.memory_available_bytes / static_cast<std::uint64_t>(n);
  const int threads = std::max(1, host.logical_cores / std::max(1, n));
  for (int i = 0; i < n; ++i) {
    DeviceInfo d;
    d.index = i;
    d.kind = DeviceKind::kVirtual;
    d.name = "virtual CPU device " + std::to_string(i);
    d.memory_total_bytes = per_device_bytes;
    d.memory_free_bytes = per_device_bytes;
    d.memory_used_bytes = 0;
    d.threads = threads;
    d.processes = 0;
    inv.devices.push_back(d);
  }
  inv.topology = square_matrix(static_cast<std::size_t>(n), "SHM");
  inv.p2p = square_matrix(static_cast<std::size_t>(n), "OK");
  return inv;
}

namespace {

// Appends `probe`'s devices and puts its matrices on the diagonal block; links across vendors
// go through the host ("SYS"), peer access across vendors is not supported ("NS").
void append(Inventory& inv, const NvmlProbe& probe) {
  const std::size_t old_n = inv.devices.size();
  const std::size_t n = old_n + probe.devices.size();
  auto grow = [&](std::vector<std::vector<std::string>>& m, const std::vector<std::vector<std::string>>& block,
                  const std::string& across) {
    auto grown = square_matrix(n, across);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        if (i < old_n && j < old_n) grown[i][j] = m[i][j];
        if (i >= old_n && j >= old_n) grown[i][j] = block[i - old_n][j - old_n];
      }
    m = std::move(grown);
  };
  grow(inv.topology, probe.topology, "SYS");
  grow(inv.p2p, probe.p2p, "NS");
  inv.devices.insert(inv.devices.end(), probe.devices.begin(), probe.devices.end());
}

}  // namespace

Inventory detect_devices(const DeviceOptions& options) {
  const HostInfo host = read_host_info();
  if (options.virtual_devices > 0)
    return virtual_inventory(options.virtual_devices, options.virtual_device_memory, host);
  Inventory inv;
  inv.host = host;
  std::string why;
  if (auto nvml = NvmlLibrary::open(options.nvml_library, &why)) {
    const NvmlProbe probe = probe_nvml(*nvml);
    inv.nvml_status = "ok: " + nvml->path() + ", driver " + nvml->driver_version().value_or("unknown") + ", " +
                      std::to_string(probe.devices.size()) + " GPU(s)";
    append(inv, probe);
  } else {
    inv.nvml_status = "unavailable: " + why;
  }
  why.clear();
  if (auto rocm = RocmSmiLibrary::open(options.rocm_smi_library, &why)) {
    const NvmlProbe probe = probe_rocm(*rocm, static_cast<int>(inv.devices.size()));
    inv.rocm_status = "ok: " + std::to_string(probe.devices.size()) + " GPU(s)";
    append(inv, probe);
  } else {
    inv.rocm_status = "unavailable: " + why;
  }
  return inv;
}

}  // namespace plexus
