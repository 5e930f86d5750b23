// NVML loaded at run time with dlopen: one binary works with or without NVIDIA GPUs. Every entry
// point is optional; a missing symbol makes that query "unavailable", never a crash.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/nvml/nvml_api.h"

namespace plexus {

class NvmlLibrary {
 public:
  // Loads `path` ("" = libnvidia-ml.so.1, then libnvidia-ml.so) and calls nvmlInit. Returns
  // nullptr and sets *why ("libnvidia-ml.so.1: cannot open shared object file ...") on failure.
  static std::unique_ptr<NvmlLibrary> open(const std::string& path, std::string* why);
  ~NvmlLibrary();  // nvmlShutdown, dlclose
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const std::string& path() const { return path_; }
  std::string error_string(nvmlReturn_t code) const;
  std::optional<std::string> driver_version() const;
  // Handles of every GPU NVML reports, index order; devices whose handle fails are nullptr.
  const std::vector<nvmlDevice_t>& devices() const { return devices_; }

  // The resolved entry points; nullptr where the library lacks the symbol.
  struct Api {
    nvmlShutdown_fn shutdown = nullptr;
    nvmlErrorString_fn error_string = nullptr;
    nvmlSystemGetDriverVersion_fn driver_version = nullptr;
    nvmlDeviceGetCount_v2_fn device_count = nullptr;
    nvmlDeviceGetHandleByIndex_v2_fn handle_by_index = nullptr;
    nvmlDeviceGetName_fn name = nullptr;
    nvmlDeviceGetUUID_fn uuid = nullptr;
    nvmlDeviceGetMemoryInfo_fn memory_info = nullptr;
    nvmlDeviceGetCudaComputeCapability_fn compute_capability = nullptr;
    nvmlDeviceGetPowerManagementLimit_fn power_limit = nullptr;
    nvmlDeviceGetClockInfo_fn clock = nullptr;
    nvmlDeviceGetMaxClockInfo_fn max_clock = nullptr;
    nvmlDeviceGetPciInfo_v3_fn pci_info = nullptr;
    nvmlDeviceGetTemperature_fn temperature = nullptr;
    nvmlDeviceGetComputeRunningProcesses_fn compute_processes = nullptr;
    // The _v2 entry point only: its records have a known layout (per-process memory).
    nvmlDeviceGetComputeRunningProcesses_v2_fn process_list = nullptr;
    nvmlDeviceGetProcessUtilization_fn process_utilization = nullptr;
    nvmlDeviceGetTopologyCommonAncestor_fn common_ancestor = nullptr;
    nvmlDeviceGetP2PStatus_fn p2p_status = nullptr;
    nvmlDeviceGetNvLinkState_fn nvlink_state = nullptr;
    nvmlDeviceGetNvLinkRemotePciInfo_v2_fn nvlink_remote_pci = nullptr;
    nvmlDeviceGetUtilizationRates_fn utilization = nullptr;
    nvmlDeviceGetPowerUsage_fn power_usage = nullptr;
    nvmlDeviceGetTotalEnergyConsumption_fn total_energy = nullptr;
    nvmlDeviceGetCurrentClocksThrottleReasons_fn throttle_reasons = nullptr;
  };
  const Api& api() const { return api_; }

 private:
  NvmlLibrary() = default;

  void* handle_ = nullptr;
  std::string path_;
  bool initialized_ = false;
  Api api_;
  std::vector<nvmlDevice_t> devices_;
};

}  // namespace plexus
