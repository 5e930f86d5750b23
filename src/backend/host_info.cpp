// /proc/cpuinfo, /proc/meminfo and /sys/devices/system/node parsing.
#include "backend/host_info.h"

#include "core/error.h"

#include <dirent.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/mmap_file.h"

namespace plexus {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Splits "key : value" lines; returns false for lines without a colon.
bool split_field(const std::string& line, std::string& key, std::string& value) {
  const std::size_t colon = line.find(':');
  if (colon == std::string::npos) return false;
  key = trim(line.substr(0, colon));
  value = trim(line.substr(colon + 1));
  return true;
}

int count_numa_nodes() {
  DIR* dir = opendir("/sys/devices/system/node");
  if (dir == nullptr) return 1;
  int nodes = 0;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
        std::isdigit(static_cast<unsigned char>(name[4])))
      ++nodes;
  }
  closedir(dir);
  return nodes > 0 ? nodes : 1;
}

// Each IsaFeatures field with its /proc/cpuinfo flag name, in the struct's order.
const std::array<std::pair<const char*, bool IsaFeatures::*>, 12>& isa_fields() {
  static const std::array<std::pair<const char*, bool IsaFeatures::*>, 12> fields{{
      {"avx2", &IsaFeatures::avx2},
      {"avx512f", &IsaFeatures::avx512f},
      {"avx512bw", &IsaFeatures::avx512bw},
      {"avx512vl", &IsaFeatures::avx512vl},
      {"avx512dq", &IsaFeatures::avx512dq},
      {"avx512_bf16", &IsaFeatures::avx512_bf16},
      {"avx512_vnni", &IsaFeatures::avx512_vnni},
      {"avx_vnni", &IsaFeatures::avx_vnni},
      {"amx_bf16", &IsaFeatures::amx_bf16},
      {"amx_int8", &IsaFeatures::amx_int8},
      {"f16c", &IsaFeatures::f16c},
      {"fma", &IsaFeatures::fma},
  }};
  return fields;
}

}  // namespace

void parse_cpuinfo(const std::string& text, HostInfo& info) {
  std::istringstream in(text);
  std::string line, key, value;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::set<std::string> sockets;
  std::string physical_id;
  int processors = 0;
  bool flags_seen = false;
  while (std::getline(in, line)) {
    if (!split_field(line, key, value)) continue;
    if (key == "processor") {
      ++processors;
    } else if ((key == "model name" || key == "Model" || key == "cpu model") && info.cpu_model == "unknown") {
      info.cpu_model = value;
    } else if (key == "physical id") {
      physical_id = value;
      sockets.insert(value);
    } else if (key == "core id") {
      cores.emplace(physical_id, value);
    } else if ((key == "flags" || key == "Features") && !flags_seen) {
      flags_seen = true;
      std::istringstream words(value);
      std::string flag;
      while (words >> flag) {
        for (const auto& [name, field] : isa_fields()) {
          if (flag == name) info.isa.*field = true;
        }
      }
    }
  }
  if (processors > 0) info.logical_cores = processors;
  info.physical_cores = static_cast<int>(cores.size());
  info.sockets = static_cast<int>(sockets.size());
}

void parse_meminfo(const std::string& text, HostInfo& info) {
  std::istringstream in(text);
  std::string line, key, value;
  std::uint64_t free_kib = 0;
  bool have_available = false;
  while (std::getline(in, line)) {
    if (!split_field(line, key, value)) continue;
    const std::uint64_t kib = std::strtoull(value.c_str(), nullptr, 10);
    if (key == "MemTotal") info.memory_total_bytes = kib * 1024;
    if (key == "MemFree") free_kib = kib;
    if (key == "MemAvailable") {
      info.memory_available_bytes = kib * 1024;
      have_available = true;
    }
  }
  if (!have_available) info.memory_available_bytes = free_kib * 1024;
}

HostInfo read_host_info() {
  HostInfo info;
  parse_cpuinfo(read_text_file_or_empty("/proc/cpuinfo"), info);
  parse_meminfo(read_text_file_or_empty("/proc/meminfo"), info);
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  if (info.logical_cores == 0) info.logical_cores = hw > 0 ? hw : 1;
  if (info.sockets == 0) info.sockets = 1;
  info.numa_nodes = count_numa_nodes();
  return info;
}

std::string isa_summary(const IsaFeatures& isa) {
  std::string out;
  auto add = [&](bool present, const char* name) {
    if (!present) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  for (const auto& [name, field] : isa_fields()) add(isa.*field, name);
  return out.empty() ? "none" : out;
}

Json to_json(const HostInfo& info) {
  Json isa = Json::object();
  for (const auto& [name, field] : isa_fields()) isa[name] = info.isa.*field;
  return Json{{"cpu_model", info.cpu_model},
              {"logical_cores", info.logical_cores},
              {"physical_cores", info.physical_cores},
              {"sockets", info.sockets},
              {"numa_nodes", info.numa_nodes},
              {"memory_total_bytes", info.memory_total_bytes},
              {"memory_available_bytes", info.memory_available_bytes},
              {"isa", isa}};
}

HostInfo host_info_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": field 'host' must be an object");
  HostInfo info;
  info.cpu_model = json_string_or(j, "cpu_model", info.cpu_model, where);
  info.logical_cores = static_cast<int>(json_int_or(j, "logical_cores", 0, where));
  info.physical_cores = static_cast<int>(json_int_or(j, "physical_cores", 0, where));
  info.sockets = static_cast<int>(json_int_or(j, "sockets", 0, where));
  info.numa_nodes = static_cast<int>(json_int_or(j, "numa_nodes", 1, where));
  const long long total = json_int_or(j, "memory_total_bytes", 0, where);
  const long long available = json_int_or(j, "memory_available_bytes", 0, where);
  if (total < 0 || available < 0) throw InputError(where + ": host memory_total_bytes / memory_available_bytes must not be negative");
  info.memory_total_bytes = static_cast<std::uint64_t>(total);
  info.memory_available_bytes = static_cast<std::uint64_t>(available);
  if (j.contains("isa")) {
    const Json& isa = j["isa"];
    if (!isa.is_object()) throw InputError(where + ": field 'host.isa' must be an object");
    for (const auto& [name, field] : isa_fields()) info.isa.*field = json_bool_or(isa, name, false, where + ": host.isa");
  }
  return info;
}

}  // namespace plexus
