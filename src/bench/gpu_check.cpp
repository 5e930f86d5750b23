// backend.device_ids on a host without a GPU the CUDA runtime can use.
#include "bench/gpu_check.h"

#include "backend/cuda_availability.h"
#include "backend/detect.h"
#include "backend/device_options.h"
#include "core/error.h"

namespace plexus::bench {

std::string check_gpus_asked(const BenchConfig& config, const std::string& config_file, bool allow_cpu_devices) {
  const BackendConfig& b = config.backend;
  // Virtual devices make the numbers exist on the CPU on purpose.
  if (b.device_ids.empty() || b.virtual_devices > 0) return "";
  const CudaAvailability cuda = probe_cuda(CudaFreeMemory::kNone);
  if (cuda.usable()) return "";
  std::string ids;
  for (long long d : b.device_ids) ids += (ids.empty() ? "" : ", ") + std::to_string(d);
  const Inventory inventory = detect_devices(device_options_from_env());
  std::string found;
  for (const DeviceInfo& d : inventory.devices) found += (found.empty() ? "" : ", ") + std::to_string(d.index) + " (" + d.name + ")";
  found = found.empty() ? "no GPU" : "GPU(s) " + found + " through the driver's management library";
  const std::string what = "backend.device_ids [" + ids + "] asks for GPUs, but this host has " + found +
                           " and CUDA is " + cuda.status();
  if (allow_cpu_devices) {
    return what + ": --allow-cpu-devices: running on " + std::to_string(b.device_ids.size()) +
           " virtual CPU devices with the configuration's budgets instead (the GPU figures are what the GPUs did meanwhile)";
  }
  throw InputError(where_in_file(config, config_file, "backend.device_ids") + what +
                   ": run it on a host with those GPUs, set backend.virtual_devices to rehearse the plan on the CPU, or "
                   "pass --allow-cpu-devices to run these budgets on virtual CPU devices");
}

}  // namespace plexus::bench
