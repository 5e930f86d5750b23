// Reads every NVIDIA GPU's facts and the link between every pair through a loaded NVML.
#pragma once
#include <string>
#include <vector>

#include "backend/device_info.h"
#include "backend/nvml/nvml_library.h"

namespace plexus {

struct NvmlProbe {
  std::vector<DeviceInfo> devices;                  // index = NVML index
  std::vector<std::vector<std::string>> topology;  // (n, n) link labels
  std::vector<std::vector<std::string>> p2p;       // (n, n) "OK" / "NS" / "?"
};

NvmlProbe probe_nvml(const NvmlLibrary& nvml);

// Maps a common-ancestor level to its label ("PIX", "PXB", "PHB", "NODE", "SYS"); "?" otherwise.
std::string topology_label(int level);

}  // namespace plexus
