// JSON for detection results: every optional field is present, null when unavailable.
#include "backend/device_info.h"

namespace plexus {

namespace {
template <typename T>
Json or_null(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}
}  // namespace

Json to_json(const DeviceInfo& d) {
  Json j{{"index", d.index},
         {"kind", device_kind_name(d.kind)},
         {"name", d.name},
         {"uuid", or_null(d.uuid)},
         {"memory_total_bytes", or_null(d.memory_total_bytes)},
         {"memory_free_bytes", or_null(d.memory_free_bytes)},
         {"memory_used_bytes", or_null(d.memory_used_bytes)},
         {"compute_capability", or_null(d.compute_capability)},
         {"driver_version", or_null(d.driver_version)},
         {"pci_bus_id", or_null(d.pci_bus_id)},
         {"power_limit_w", or_null(d.power_limit_w)},
         {"temperature_c", or_null(d.temperature_c)},
         {"clocks_mhz",
          {{"sm", or_null(d.sm_clock_mhz)},
           {"memory", or_null(d.memory_clock_mhz)},
           {"sm_max", or_null(d.max_sm_clock_mhz)},
           {"memory_max", or_null(d.max_memory_clock_mhz)}}},
         {"processes", or_null(d.processes)},
         {"threads", or_null(d.threads)},
         {"cuda_device", or_null(d.cuda_device)},
         {"virtual_on_gpu", or_null(d.virtual_on_gpu)},
         {"problems", d.problems}};
  return j;
}

Json to_json(const Inventory& inventory) {
  Json devices = Json::array();
  for (const DeviceInfo& d : inventory.devices) devices.push_back(to_json(d));
  // The host last, named "cpu" as in accelerate device maps (offload target, not in topology).
  devices.push_back(Json{{"index", "cpu"},
                         {"kind", "cpu"},
                         {"name", inventory.host.cpu_model},
                         {"memory_total_bytes", inventory.host.memory_total_bytes},
                         {"memory_free_bytes", inventory.host.memory_available_bytes},
                         {"threads", inventory.host.logical_cores}});
  return Json{{"devices", devices},
              {"topology", inventory.topology},
              {"p2p", inventory.p2p},
              {"host", to_json(inventory.host)},
              {"virtual_devices", inventory.virtual_devices},
              {"virtual_gpus", inventory.virtual_gpus},
              {"sources", {{"nvml", inventory.nvml_status}, {"rocm_smi", inventory.rocm_status}, {"cuda", inventory.cuda_status}}}};
}

std::vector<std::vector<std::string>> square_matrix(std::size_t n, const std::string& fill) {
  const std::string self("X");
  std::vector<std::vector<std::string>> m;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string> row(n, fill);
    row[i] = self;
    m.push_back(std::move(row));
  }
  return m;
}

}  // namespace plexus
