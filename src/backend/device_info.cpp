// JSON for detection results: every optional field is present, null when unavailable.
#include "backend/device_info.h"

#include "core/error.h"

namespace plexus {

namespace {
template <typename T>
Json or_null(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// An optional field: absent or null stays empty; otherwise it must have the type.
std::optional<std::string> opt_string(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_string()) throw InputError(where + ": field '" + key + "' must be a string or null");
  return j[key].get<std::string>();
}

std::optional<std::uint64_t> opt_bytes(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number_integer() || j[key].get<long long>() < 0) {
    throw InputError(where + ": field '" + key + "' must be a non-negative integer (bytes) or null");
  }
  return j[key].get<std::uint64_t>();
}

std::optional<double> opt_double(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) throw InputError(where + ": field '" + key + "' must be a number or null");
  return j[key].get<double>();
}

std::optional<int> opt_int(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number_integer()) throw InputError(where + ": field '" + key + "' must be an integer or null");
  return j[key].get<int>();
}

std::optional<unsigned> opt_mhz(const Json& j, const char* key, const std::string& where) {
  const std::optional<int> v = opt_int(j, key, where);
  if (!v) return std::nullopt;
  if (*v < 0) throw InputError(where + ": field '" + key + "' must not be negative");
  return static_cast<unsigned>(*v);
}

DeviceKind parse_kind(const std::string& text, const std::string& where) {
  for (DeviceKind k : {DeviceKind::kCuda, DeviceKind::kRocm, DeviceKind::kCpu, DeviceKind::kVirtual}) {
    if (text == device_kind_name(k)) return k;
  }
  throw InputError(where + ": field 'kind' is '" + text + "'; expected cuda, rocm, cpu or virtual");
}

std::vector<std::vector<std::string>> string_matrix(const Json& j, const char* key, std::size_t n, const std::string& where) {
  std::vector<std::vector<std::string>> m;
  if (!j.contains(key) || j[key].is_null()) return square_matrix(n, "?");
  const std::string what = where + ": field '" + key + "'";
  if (!j[key].is_array() || j[key].size() != n) {
    throw InputError(what + " must be an array of " + std::to_string(n) + " rows (one per device)");
  }
  for (const Json& row : j[key]) {
    if (!row.is_array() || row.size() != n) throw InputError(what + " must have " + std::to_string(n) + " entries in every row");
    std::vector<std::string> r;
    for (const Json& cell : row) {
      if (!cell.is_string()) throw InputError(what + " must hold strings");
      r.push_back(cell.get<std::string>());
    }
    m.push_back(std::move(r));
  }
  return m;
}

DeviceInfo device_from_json(const Json& j, const std::string& where) {
  DeviceInfo d;
  d.index = static_cast<int>(json_int(j, "index", where));
  d.kind = parse_kind(json_string_or(j, "kind", "", where), where);
  d.name = json_string_or(j, "name", "", where);
  d.uuid = opt_string(j, "uuid", where);
  d.memory_total_bytes = opt_bytes(j, "memory_total_bytes", where);
  d.memory_free_bytes = opt_bytes(j, "memory_free_bytes", where);
  d.memory_used_bytes = opt_bytes(j, "memory_used_bytes", where);
  d.compute_capability = opt_string(j, "compute_capability", where);
  d.driver_version = opt_string(j, "driver_version", where);
  d.pci_bus_id = opt_string(j, "pci_bus_id", where);
  d.power_limit_w = opt_double(j, "power_limit_w", where);
  d.temperature_c = opt_double(j, "temperature_c", where);
  if (j.contains("clocks_mhz") && !j["clocks_mhz"].is_null()) {
    const Json& c = j["clocks_mhz"];
    if (!c.is_object()) throw InputError(where + ": field 'clocks_mhz' must be an object");
    const std::string cw = where + ": clocks_mhz";
    d.sm_clock_mhz = opt_mhz(c, "sm", cw);
    d.memory_clock_mhz = opt_mhz(c, "memory", cw);
    d.max_sm_clock_mhz = opt_mhz(c, "sm_max", cw);
    d.max_memory_clock_mhz = opt_mhz(c, "memory_max", cw);
  }
  d.processes = opt_int(j, "processes", where);
  d.threads = opt_int(j, "threads", where);
  d.cuda_device = opt_string(j, "cuda_device", where);
  d.virtual_on_gpu = opt_int(j, "virtual_on_gpu", where);
  if (j.contains("problems") && !j["problems"].is_null()) {
    if (!j["problems"].is_array()) throw InputError(where + ": field 'problems' must be an array of strings");
    for (const Json& p : j["problems"]) {
      if (!p.is_string()) throw InputError(where + ": field 'problems' must be an array of strings");
      d.problems.push_back(p.get<std::string>());
    }
  }
  return d;
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

Inventory inventory_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": expected a JSON object as `plexus detect --json` prints it");
  if (!j.contains("devices") || !j["devices"].is_array()) {
    throw InputError(where + ": field 'devices' must be an array (the output of `plexus detect --json`)");
  }
  Inventory inv;
  for (std::size_t i = 0; i < j["devices"].size(); ++i) {
    const Json& d = j["devices"][i];
    const std::string dw = where + ": devices[" + std::to_string(i) + "]";
    if (!d.is_object()) throw InputError(dw + " must be an object");
    if (d.contains("index") && d["index"].is_string() && d["index"].get<std::string>() == "cpu") continue;  // the host
    if (!d.contains("index") || !d["index"].is_number_integer()) {
      throw InputError(dw + ": field 'index' must be an integer (or \"cpu\" for the host)");
    }
    inv.devices.push_back(device_from_json(d, dw));
    if (inv.devices.back().index != static_cast<int>(inv.devices.size()) - 1) {
      throw InputError(dw + ": field 'index' is " + std::to_string(inv.devices.back().index) + "; devices are numbered 0.." +
                       std::to_string(j["devices"].size()) + " in order");
    }
  }
  if (!j.contains("host")) throw InputError(where + ": field 'host' is missing (the output of `plexus detect --json` has it)");
  inv.host = host_info_from_json(j["host"], where);
  inv.topology = string_matrix(j, "topology", inv.devices.size(), where);
  inv.p2p = string_matrix(j, "p2p", inv.devices.size(), where);
  inv.virtual_devices = json_bool_or(j, "virtual_devices", false, where);
  inv.virtual_gpus = static_cast<int>(json_int_or(j, "virtual_gpus", 0, where));
  if (j.contains("sources") && j["sources"].is_object()) {
    const Json& s = j["sources"];
    inv.nvml_status = json_string_or(s, "nvml", inv.nvml_status, where + ": sources");
    inv.rocm_status = json_string_or(s, "rocm_smi", inv.rocm_status, where + ": sources");
    inv.cuda_status = json_string_or(s, "cuda", inv.cuda_status, where + ": sources");
  }
  return inv;
}

}  // namespace plexus
