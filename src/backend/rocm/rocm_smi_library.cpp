// dlopen/dlsym of ROCm SMI and rsmi_init.
#include "backend/rocm/rocm_smi_library.h"

#include <dlfcn.h>

#include <vector>

#include "core/shared_library.h"

namespace plexus {

std::unique_ptr<RocmSmiLibrary> RocmSmiLibrary::open(const std::string& path, std::string* why) {
  std::unique_ptr<RocmSmiLibrary> lib(new RocmSmiLibrary());
  const std::vector<std::string> candidates =
      path.empty() ? std::vector<std::string>{"librocm_smi64.so", "/opt/rocm/lib/librocm_smi64.so"}
                   : std::vector<std::string>{path};
  std::string errors;
  for (const std::string& candidate : candidates) {
    lib->handle_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ != nullptr) break;
    const char* error = dlerror();
    if (!errors.empty()) errors += "; ";
    errors += error != nullptr ? error : candidate + ": cannot be loaded";
  }
  if (lib->handle_ == nullptr) {
    if (why) *why = errors + " (ROCm not installed? set PLEXUS_ROCM_SMI_LIBRARY to its librocm_smi64.so)";
    return nullptr;
  }
  int (*init)(std::uint64_t) = nullptr;
  load_symbol(lib->handle_, init, "rsmi_init");
  if (init == nullptr) {
    if (why) *why = "the ROCm SMI library has no rsmi_init";
    return nullptr;
  }
  if (const int rc = init(0); rc != 0) {
    if (why) *why = "rsmi_init failed with status " + std::to_string(rc);
    return nullptr;
  }
  lib->initialized_ = true;
  void* h = lib->handle_;
  Api& a = lib->api_;
  load_symbol(h, a.shut_down, "rsmi_shut_down");
  load_symbol(h, a.num_devices, "rsmi_num_monitor_devices");
  load_symbol(h, a.name, "rsmi_dev_name_get");
  load_symbol(h, a.unique_id, "rsmi_dev_unique_id_get");
  load_symbol(h, a.memory_total, "rsmi_dev_memory_total_get");
  load_symbol(h, a.memory_usage, "rsmi_dev_memory_usage_get");
  load_symbol(h, a.power_average, "rsmi_dev_power_ave_get");
  load_symbol(h, a.power_cap, "rsmi_dev_power_cap_get");
  load_symbol(h, a.temperature, "rsmi_dev_temp_metric_get");
  load_symbol(h, a.busy_percent, "rsmi_dev_busy_percent_get");
  load_symbol(h, a.energy_count, "rsmi_dev_energy_count_get");
  load_symbol(h, a.link_type, "rsmi_topo_get_link_type");
  load_symbol(h, a.p2p_accessible, "rsmi_is_P2P_accessible");
  if (a.num_devices == nullptr || a.num_devices(&lib->count_) != 0) lib->count_ = 0;
  return lib;
}

RocmSmiLibrary::~RocmSmiLibrary() {
  if (initialized_ && api_.shut_down != nullptr) api_.shut_down();
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace plexus
