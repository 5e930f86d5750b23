// dlopen/dlsym of NVML, nvmlInit, and the device handle list.
#include "backend/nvml/nvml_library.h"

#include <dlfcn.h>

#include "backend/driver_string.h"
#include "core/shared_library.h"

namespace plexus {

namespace {

template <typename F>
void resolve_first(void* handle, F& out, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    load_symbol(handle, out, name);
    if (out != nullptr) return;
  }
}

}  // namespace

std::unique_ptr<NvmlLibrary> NvmlLibrary::open(const std::string& path, std::string* why) {
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  const std::vector<std::string> candidates =
      path.empty() ? std::vector<std::string>{"libnvidia-ml.so.1", "libnvidia-ml.so"} : std::vector<std::string>{path};
  std::string errors;
  for (const std::string& candidate : candidates) {
    lib->handle_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ != nullptr) {
      lib->path_ = candidate;
      break;
    }
    const char* error = dlerror();
    if (!errors.empty()) errors += "; ";
    errors += error != nullptr ? error : candidate + ": cannot be loaded";
  }
  if (lib->handle_ == nullptr) {
    if (why) *why = errors + " (NVIDIA driver not installed? set PLEXUS_NVML_LIBRARY to its libnvidia-ml.so.1)";
    return nullptr;
  }
  nvmlInit_v2_fn init = nullptr;
  resolve_first(lib->handle_, init, {"nvmlInit_v2", "nvmlInit"});
  if (init == nullptr) {
    if (why) *why = lib->path_ + " has no nvmlInit_v2: not an NVML library";
    return nullptr;
  }
  Api& a = lib->api_;
  load_symbol(lib->handle_, a.error_string, "nvmlErrorString");
  const nvmlReturn_t rc = init();
  if (rc != kNvmlSuccess) {
    if (why) *why = "nvmlInit failed in " + lib->path_ + ": " + lib->error_string(rc);
    return nullptr;
  }
  lib->initialized_ = true;
  void* h = lib->handle_;
  load_symbol(h, a.shutdown, "nvmlShutdown");
  load_symbol(h, a.driver_version, "nvmlSystemGetDriverVersion");
  resolve_first(h, a.device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  resolve_first(h, a.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  load_symbol(h, a.name, "nvmlDeviceGetName");
  load_symbol(h, a.uuid, "nvmlDeviceGetUUID");
  load_symbol(h, a.memory_info, "nvmlDeviceGetMemoryInfo");
  load_symbol(h, a.compute_capability, "nvmlDeviceGetCudaComputeCapability");
  resolve_first(h, a.power_limit, {"nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit"});
  load_symbol(h, a.clock, "nvmlDeviceGetClockInfo");
  load_symbol(h, a.max_clock, "nvmlDeviceGetMaxClockInfo");
  load_symbol(h, a.pci_info, "nvmlDeviceGetPciInfo_v3");
  load_symbol(h, a.temperature, "nvmlDeviceGetTemperature");
  // Called with a zero-length array only (to count), so the record layout of each version
  // does not matter.
  resolve_first(h, a.compute_processes,
                {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
                 "nvmlDeviceGetComputeRunningProcesses"});
  load_symbol(h, a.process_list, "nvmlDeviceGetComputeRunningProcesses_v2");
  load_symbol(h, a.process_utilization, "nvmlDeviceGetProcessUtilization");
  load_symbol(h, a.common_ancestor, "nvmlDeviceGetTopologyCommonAncestor");
  load_symbol(h, a.p2p_status, "nvmlDeviceGetP2PStatus");
  load_symbol(h, a.nvlink_state, "nvmlDeviceGetNvLinkState");
  load_symbol(h, a.nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  load_symbol(h, a.utilization, "nvmlDeviceGetUtilizationRates");
  load_symbol(h, a.power_usage, "nvmlDeviceGetPowerUsage");
  load_symbol(h, a.total_energy, "nvmlDeviceGetTotalEnergyConsumption");
  resolve_first(h, a.throttle_reasons,
                {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});

  unsigned count = 0;
  if (a.device_count != nullptr && a.device_count(&count) == kNvmlSuccess && a.handle_by_index != nullptr) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t device = nullptr;
      if (a.handle_by_index(i, &device) != kNvmlSuccess) device = nullptr;
      lib->devices_.push_back(device);
    }
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialized_ && api_.shutdown != nullptr) api_.shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvmlLibrary::error_string(nvmlReturn_t code) const {
  if (api_.error_string != nullptr) {
    if (const char* text = api_.error_string(code)) return std::string(text) + " (NVML error " + std::to_string(code) + ")";
  }
  return "NVML error " + std::to_string(code);
}

std::optional<std::string> NvmlLibrary::driver_version() const {
  if (api_.driver_version == nullptr) return std::nullopt;
  char buffer[96] = {};
  if (api_.driver_version(buffer, sizeof buffer) != kNvmlSuccess) return std::nullopt;
  return driver_string(buffer, sizeof buffer);
}

}  // namespace plexus
