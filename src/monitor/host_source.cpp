// /proc/stat deltas, /proc/self/statm, /proc/meminfo and RAPL package counters.
#include "monitor/host_source.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "backend/host_info.h"
#include "core/mmap_file.h"

namespace plexus {

namespace {

std::optional<std::uint64_t> read_u64(const std::string& path) {
  const std::string text = read_text_file_or_empty(path);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<CpuTimes> parse_proc_stat(const std::string& text) {
  std::istringstream in(text);
  std::string label;
  if (!(in >> label) || label != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest time is already in user/nice)
  std::uint64_t v[8] = {};
  for (int i = 0; i < 8; ++i)
    if (!(in >> v[i])) {
      if (i < 4) return std::nullopt;
      break;
    }
  CpuTimes t;
  for (std::uint64_t x : v) t.total += x;
  t.busy = t.total - v[3] - v[4];
  return t;
}

HostSource::HostSource(std::string powercap_root) : powercap_root_(std::move(powercap_root)) {}

bool HostSource::open(std::string*) {
  cpu_model_ = read_host_info().cpu_model;
  page_size_ = sysconf(_SC_PAGESIZE);
  last_cpu_ = parse_proc_stat(read_text_file_or_empty("/proc/stat"));
  // Package zones are intel-rapl:N (no sub-zone colon); AMD kernels expose the same names.
  if (DIR* dir = opendir(powercap_root_.c_str())) {
    while (dirent* entry = readdir(dir)) {
      const std::string zone = entry->d_name;
      if (zone.rfind("intel-rapl:", 0) != 0 || zone.find(':', 11) != std::string::npos) continue;
      RaplZone z;
      z.energy_path = powercap_root_ + "/" + zone + "/energy_uj";
      const auto now = read_u64(z.energy_path);
      if (!now) continue;  // not readable (needs root on recent kernels)
      z.last_uj = *now;
      z.max_uj = read_u64(powercap_root_ + "/" + zone + "/max_energy_range_uj").value_or(0);
      zones_.push_back(z);
    }
    closedir(dir);
  }
  return true;
}

std::optional<double> HostSource::read_rapl_j() {
  if (zones_.empty()) return std::nullopt;
  for (RaplZone& z : zones_) {
    const auto now = read_u64(z.energy_path);
    if (!now) return std::nullopt;
    std::uint64_t delta = *now >= z.last_uj ? *now - z.last_uj : z.max_uj - z.last_uj + *now;  // wrapped
    z.last_uj = *now;
    rapl_accumulated_j_ += static_cast<double>(delta) / 1e6;
  }
  return rapl_accumulated_j_;
}

void HostSource::sample(std::vector<DeviceReading>& out) {
  DeviceReading r;
  r.index = -1;
  r.kind = DeviceKind::kCpu;
  r.name = cpu_model_;
  if (const auto now = parse_proc_stat(read_text_file_or_empty("/proc/stat"))) {
    if (last_cpu_ && now->total > last_cpu_->total)
      r.utilization_percent = 100.0 * static_cast<double>(now->busy - last_cpu_->busy) /
                              static_cast<double>(now->total - last_cpu_->total);
    last_cpu_ = now;
  }
  HostInfo memory;
  parse_meminfo(read_text_file_or_empty("/proc/meminfo"), memory);
  if (memory.memory_total_bytes > 0) {
    r.memory_total_mb = memory.memory_total_bytes / 1048576.0;
    r.memory_used_mb = (memory.memory_total_bytes - memory.memory_available_bytes) / 1048576.0;
  }
  unsigned long long pages_total = 0, pages_resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%llu %llu", &pages_total, &pages_resident) == 2)
      r.process_rss_mb = static_cast<double>(pages_resident) * page_size_ / 1048576.0;
    std::fclose(f);
  }
  r.energy_counter_j = read_rapl_j();
  out.push_back(r);
}

}  // namespace plexus
