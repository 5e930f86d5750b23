// Assembles an Inventory from the GPU probes (or virtual devices) and the host facts.
#include "backend/detect.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "backend/deadline_runner.h"
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
  // Each driver is asked with a time limit (a hung driver must not hang the run): the job owns
  // what it writes, so an abandoned one writes only into memory it keeps alive itself.
  struct Probed {
    bool ok = false;
    std::string status;
    NvmlProbe probe;
  };
  const auto timeout_status = [](const char* what, std::chrono::milliseconds limit) {
    return std::string("unavailable: ") + what + " gave no answer within " + std::to_string(limit.count()) +
           " ms (a hung driver?); its GPUs are left out";
  };
  auto nvml_result = std::make_shared<Probed>();
  DeadlineRunner nvml_runner(driver_call_limit());
  const bool nvml_answered = nvml_runner.run([nvml_result, path = options.nvml_library] {
    std::string why;
    if (auto nvml = NvmlLibrary::open(path, &why)) {
      nvml_result->probe = probe_nvml(*nvml);
      nvml_result->status = "ok: " + nvml->path() + ", driver " + nvml->driver_version().value_or("unknown") + ", " +
                            std::to_string(nvml_result->probe.devices.size()) + " GPU(s)";
      nvml_result->ok = true;
    } else {
      nvml_result->status = "unavailable: " + why;
    }
  });
  inv.nvml_status = nvml_answered ? nvml_result->status : timeout_status("NVML", nvml_runner.limit());
  if (nvml_answered && nvml_result->ok) append(inv, nvml_result->probe);
  auto rocm_result = std::make_shared<Probed>();
  DeadlineRunner rocm_runner(driver_call_limit());
  const bool rocm_answered = rocm_runner.run([rocm_result, path = options.rocm_smi_library, first = static_cast<int>(inv.devices.size())] {
    std::string why;
    if (auto rocm = RocmSmiLibrary::open(path, &why)) {
      rocm_result->probe = probe_rocm(*rocm, first);
      rocm_result->status = "ok: " + std::to_string(rocm_result->probe.devices.size()) + " GPU(s)";
      rocm_result->ok = true;
    } else {
      rocm_result->status = "unavailable: " + why;
    }
  });
  inv.rocm_status = rocm_answered ? rocm_result->status : timeout_status("ROCm SMI", rocm_runner.limit());
  if (rocm_answered && rocm_result->ok) append(inv, rocm_result->probe);
  return inv;
}

}  // namespace plexus
