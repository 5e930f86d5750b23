// ROCm SMI queries: name, VRAM, power cap, temperature, and XGMI/PCIe links between GPUs.
#include "backend/rocm/rocm_probe.h"
#include "backend/driver_string.h"

#include <cstdio>

namespace plexus {

NvmlProbe probe_rocm(const RocmSmiLibrary& rocm, int first_index) {
  NvmlProbe probe;
  const auto& a = rocm.api();
  const std::uint32_t n = rocm.device_count();
  for (std::uint32_t i = 0; i < n; ++i) {
    DeviceInfo info;
    info.index = first_index + static_cast<int>(i);
    info.kind = DeviceKind::kRocm;
    info.name = "AMD GPU " + std::to_string(i);
    char text[128] = {};
    if (a.name != nullptr && a.name(i, text, sizeof text) == 0) info.name = driver_string(text, sizeof text);
    std::uint64_t value = 0;
    if (a.unique_id != nullptr && a.unique_id(i, &value) == 0) {
      char uuid[32];
      std::snprintf(uuid, sizeof uuid, "%016llx", static_cast<unsigned long long>(value));
      info.uuid = std::string(uuid);
    }
    std::uint64_t used = 0;
    if (a.memory_total != nullptr && a.memory_total(i, 0, &value) == 0) {
      info.memory_total_bytes = value;
      if (a.memory_usage != nullptr && a.memory_usage(i, 0, &used) == 0) {
        info.memory_used_bytes = used;
        info.memory_free_bytes = value > used ? value - used : 0;
      }
    }
    if (a.power_cap != nullptr && a.power_cap(i, 0, &value) == 0) info.power_limit_w = value / 1e6;
    std::int64_t millidegrees = 0;
    if (a.temperature != nullptr && a.temperature(i, 0, 0, &millidegrees) == 0)
      info.temperature_c = millidegrees / 1000.0;
    probe.devices.push_back(info);
  }
  probe.topology = square_matrix(n, "?");
  probe.p2p = square_matrix(n, "?");
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      if (i == j) continue;
      std::uint64_t hops = 0;
      int type = 0;
      if (a.link_type != nullptr && a.link_type(i, j, &hops, &type) == 0)
        probe.topology[i][j] = type == 2 ? "XGMI" : type == 1 ? (hops <= 2 ? "PIX" : "SYS") : "?";
      bool accessible = false;
      if (a.p2p_accessible != nullptr && a.p2p_accessible(i, j, &accessible) == 0)
        probe.p2p[i][j] = accessible ? "OK" : "NS";
    }
  }
  return probe;
}

}  // namespace plexus
