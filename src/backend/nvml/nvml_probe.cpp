// Per-device queries and the pairwise topology: NVLink count from each link's remote PCI
// address, otherwise the PCIe common ancestor; peer-to-peer read status alongside.
#include "backend/nvml/nvml_probe.h"
#include "backend/driver_string.h"

#include <strings.h>

#include <cstring>

namespace plexus {

namespace {

// Records a failed query on the device unless the library simply lacks it or it is unsupported.
void note_failure(const NvmlLibrary& nvml, DeviceInfo& info, const char* what, nvmlReturn_t rc) {
  if (rc == kNvmlSuccess || rc == kNvmlErrorNotSupported || rc == kNvmlErrorFunctionNotFound) return;
  info.problems.push_back(std::string(what) + ": " + nvml.error_string(rc));
}

std::optional<unsigned> clock_of(const NvmlLibrary& nvml, nvmlDevice_t h, bool max, int type) {
  const auto& a = nvml.api();
  unsigned mhz = 0;
  auto fn = max ? a.max_clock : a.clock;
  if (fn == nullptr || fn(h, type, &mhz) != kNvmlSuccess) return std::nullopt;
  return mhz;
}

DeviceInfo probe_device(const NvmlLibrary& nvml, int index, nvmlDevice_t h,
                        const std::optional<std::string>& driver) {
  const auto& a = nvml.api();
  DeviceInfo info;
  info.index = index;
  info.kind = DeviceKind::kCuda;
  info.driver_version = driver;
  info.name = "NVIDIA GPU " + std::to_string(index);
  if (h == nullptr) {
    info.problems.push_back("NVML could not open a handle for this GPU (nvmlDeviceGetHandleByIndex failed)");
    return info;
  }
  char text[128] = {};
  if (a.name != nullptr && a.name(h, text, sizeof text) == kNvmlSuccess) info.name = driver_string(text, sizeof text);
  std::memset(text, 0, sizeof text);
  if (a.uuid != nullptr && a.uuid(h, text, sizeof text) == kNvmlSuccess) info.uuid = driver_string(text, sizeof text);
  if (a.memory_info != nullptr) {
    nvmlMemory_t memory{};
    const nvmlReturn_t rc = a.memory_info(h, &memory);
    if (rc == kNvmlSuccess) {
      info.memory_total_bytes = memory.total;
      info.memory_free_bytes = memory.free;
      info.memory_used_bytes = memory.used;
    }
    note_failure(nvml, info, "memory info", rc);
  }
  int major = 0, minor = 0;
  if (a.compute_capability != nullptr && a.compute_capability(h, &major, &minor) == kNvmlSuccess)
    info.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  unsigned value = 0;
  if (a.power_limit != nullptr && a.power_limit(h, &value) == kNvmlSuccess) info.power_limit_w = value / 1000.0;
  if (a.temperature != nullptr) {
    const nvmlReturn_t rc = a.temperature(h, kNvmlTemperatureGpu, &value);
    if (rc == kNvmlSuccess) info.temperature_c = value;
    note_failure(nvml, info, "temperature", rc);
  }
  info.sm_clock_mhz = clock_of(nvml, h, false, kNvmlClockSm);
  info.memory_clock_mhz = clock_of(nvml, h, false, kNvmlClockMem);
  info.max_sm_clock_mhz = clock_of(nvml, h, true, kNvmlClockSm);
  info.max_memory_clock_mhz = clock_of(nvml, h, true, kNvmlClockMem);
  if (a.pci_info != nullptr) {
    nvmlPciInfo_t pci{};
    if (a.pci_info(h, &pci) == kNvmlSuccess) {
      info.pci_bus_id = driver_string(pci.busId, sizeof pci.busId);
    }
  }
  if (a.compute_processes != nullptr) {
    unsigned count = 0;
    const nvmlReturn_t rc = a.compute_processes(h, &count, nullptr);
    if (rc == kNvmlSuccess || rc == kNvmlErrorInsufficientSize) info.processes = static_cast<int>(count);
  }
  return info;
}

// Number of active NVLinks from device i that end at the GPU with PCI bus id `peer_bus`.
int nvlinks_between(const NvmlLibrary& nvml, nvmlDevice_t h, const std::string& peer_bus) {
  const auto& a = nvml.api();
  if (a.nvlink_state == nullptr || a.nvlink_remote_pci == nullptr) return 0;
  int links = 0;
  for (unsigned link = 0; link < kNvmlNvlinkMaxLinks; ++link) {
    int active = 0;
    if (a.nvlink_state(h, link, &active) != kNvmlSuccess || active == 0) continue;
    nvmlPciInfo_t remote{};
    if (a.nvlink_remote_pci(h, link, &remote) != kNvmlSuccess) continue;
    remote.busId[sizeof remote.busId - 1] = '\0';
    if (strcasecmp(remote.busId, peer_bus.c_str()) == 0) ++links;
  }
  return links;
}

}  // namespace

std::string topology_label(int level) {
  switch (level) {
    case kNvmlTopologyInternal: return "X";
    case kNvmlTopologySingle: return "PIX";
    case kNvmlTopologyMultiple: return "PXB";
    case kNvmlTopologyHostbridge: return "PHB";
    case kNvmlTopologyNode: return "NODE";
    case kNvmlTopologySystem: return "SYS";
    default: return "?";  // NVML's enum, not ours: unknown levels are possible
  }
}

NvmlProbe probe_nvml(const NvmlLibrary& nvml) {
  NvmlProbe probe;
  const auto& a = nvml.api();
  const auto driver = nvml.driver_version();
  const auto& handles = nvml.devices();
  const std::size_t n = handles.size();
  for (std::size_t i = 0; i < n; ++i) probe.devices.push_back(probe_device(nvml, static_cast<int>(i), handles[i], driver));
  probe.topology = square_matrix(n, "?");
  probe.p2p = square_matrix(n, "?");
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j || handles[i] == nullptr || handles[j] == nullptr) continue;
      const auto& peer_bus = probe.devices[j].pci_bus_id;
      const int links = peer_bus ? nvlinks_between(nvml, handles[i], *peer_bus) : 0;
      int level = 0;
      if (links > 0) {
        probe.topology[i][j] = "NV" + std::to_string(links);
      } else if (a.common_ancestor != nullptr && a.common_ancestor(handles[i], handles[j], &level) == kNvmlSuccess) {
        probe.topology[i][j] = topology_label(level);
      }
      int status = 0;
      if (a.p2p_status != nullptr && a.p2p_status(handles[i], handles[j], kNvmlP2pCapsRead, &status) == kNvmlSuccess)
        probe.p2p[i][j] = status == kNvmlP2pStatusOk ? "OK" : "NS";
    }
  }
  return probe;
}

}  // namespace plexus
