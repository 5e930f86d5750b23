// backend.device_ids on a host without a GPU the CUDA runtime can use.
#include "bench/gpu_check.h"

#include <algorithm>
#include <optional>

#include "backend/cuda_availability.h"
#include "backend/detect.h"
#include "backend/device_options.h"
#include "core/error.h"

namespace plexus::bench {

std::vector<std::string> check_gpus_asked(std::vector<BenchPoint>& points, const std::string& config_file, bool allow_cpu_devices) {
  std::vector<std::string> warnings;
  // The host is probed once per bench run, when a point first names GPUs.
  std::optional<CudaAvailability> cuda;
  std::optional<Inventory> inventory;
  for (BenchPoint& point : points) {
    BackendConfig& b = point.config.backend;
    // Virtual devices make the numbers exist on the CPU on purpose.
    if (b.device_ids.empty() || b.virtual_devices > 0) continue;
    if (!cuda) cuda = probe_cuda(CudaFreeMemory::kNone);
    if (cuda->usable()) return {};
    if (!inventory) inventory = detect_devices(device_options_from_env());
    std::string ids;
    for (long long d : b.device_ids) ids += (ids.empty() ? "" : ", ") + std::to_string(d);
    std::string found;
    for (const DeviceInfo& d : inventory->devices) found += (found.empty() ? "" : ", ") + std::to_string(d.index) + " (" + d.name + ")";
    found = found.empty() ? "no GPU" : "GPU(s) " + found + " through the driver's management library";
    const std::string what = "backend.device_ids [" + ids + "] asks for GPUs, but this host has " + found + " and CUDA is " + cuda->status();
    if (!allow_cpu_devices) {
      throw InputError(where_in_file(point.config, config_file, "backend.device_ids") + what +
                       ": run it on a host with those GPUs, set backend.virtual_devices to rehearse the plan on the CPU, or "
                       "pass --allow-cpu-devices to run these budgets on virtual CPU devices");
    }
    // The budgets: the configuration's, else the detected GPUs' free memory where the driver's
    // library reports every one named; else the host's available memory shared as
    // backend.virtual_devices would share it (devices 0 to the highest named).
    const auto detected = [&](long long id) {
      return std::any_of(inventory->devices.begin(), inventory->devices.end(),
                         [&](const DeviceInfo& d) { return d.index == id && d.memory_free_bytes.has_value(); });
    };
    std::string budgets;
    if (!b.max_memory.empty()) {
      budgets = "with the configuration's budgets (backend.max_memory)";
    } else if (std::all_of(b.device_ids.begin(), b.device_ids.end(), detected)) {
      budgets = "with the detected GPUs' free memory as budgets";
    } else {
      b.virtual_devices = *std::max_element(b.device_ids.begin(), b.device_ids.end()) + 1;
      budgets = "that share the host's available memory (backend.virtual_devices: " + std::to_string(b.virtual_devices) + ")";
    }
    const std::string warning = what + ": --allow-cpu-devices: running on " + std::to_string(b.device_ids.size()) +
                                " virtual CPU devices " + budgets + " instead (the GPU figures are what the GPUs did meanwhile)";
    if (std::find(warnings.begin(), warnings.end(), warning) == warnings.end()) warnings.push_back(warning);
  }
  return warnings;
}

}  // namespace plexus::bench
