// The environment section of a benchmark result.
#include "bench/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include "backend/detect.h"
#include "backend/device_options.h"
#include "core/version.h"

namespace plexus::bench {

Json environment_json() {
  DeviceOptions o = device_options_from_env();
  o.virtual_devices = 0;
  return environment_json(detect_devices(o));
}

Json environment_json(const Inventory& inv) {
  Json gpus = Json::array();
  Json driver = nullptr;
  for (const DeviceInfo& d : inv.devices) {
    if (d.kind != DeviceKind::kCuda && d.kind != DeviceKind::kRocm) continue;
    gpus.push_back({{"index", d.index},
                    {"name", d.name},
                    {"kind", device_kind_name(d.kind)},
                    {"memory_total_mb", d.memory_total_bytes ? Json(static_cast<double>(*d.memory_total_bytes) / (1024.0 * 1024.0)) : Json(nullptr)},
                    {"driver_version", d.driver_version ? Json(*d.driver_version) : Json(nullptr)},
                    {"compute_capability", d.compute_capability ? Json(*d.compute_capability) : Json(nullptr)}});
    if (driver.is_null() && d.driver_version) driver = *d.driver_version;
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  struct utsname u {};
  std::string os = "unknown";
  if (uname(&u) == 0) os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return {{"cpu", inv.host.cpu_model},
          {"logical_cores", inv.host.logical_cores},
          {"physical_cores", inv.host.physical_cores},
          {"memory_total_bytes", inv.host.memory_total_bytes},
          {"isa", isa_summary(inv.host.isa)},
          {"gpus", gpus},
          {"driver", driver},
          {"nvml", inv.nvml_status},
          {"rocm_smi", inv.rocm_status},
          {"plexus_version", PLEXUS_VERSION},
          {"plexus_commit", PLEXUS_GIT_COMMIT},
          {"hostname", std::string(host)},
          {"os", os},
          {"compiler", __VERSION__}};
}

}  // namespace plexus::bench
