// One NVML query per metric per device per tick; failures leave the field empty.
#include "monitor/nvml_source.h"
#include "backend/driver_string.h"

#include <algorithm>
#include <map>

#include "monitor/process_tree.h"

namespace plexus {

NvmlSource::NvmlSource(std::string library, std::vector<int> devices, int process_root)
    : library_path_(std::move(library)), wanted_(std::move(devices)), process_root_(process_root) {}

bool NvmlSource::open(std::string* why) {
  nvml_ = NvmlLibrary::open(library_path_, why);
  if (!nvml_) return false;
  const auto& a = nvml_->api();
  for (std::size_t i = 0; i < nvml_->devices().size(); ++i) {
    char text[128] = {};
    nvmlDevice_t h = nvml_->devices()[i];
    if (h != nullptr && a.name != nullptr && a.name(h, text, sizeof text) == kNvmlSuccess) names_.push_back(driver_string(text, sizeof text));
    else names_.push_back("NVIDIA GPU " + std::to_string(i));
  }
  last_seen_us_.assign(nvml_->devices().size(), 0);
  return true;
}

int NvmlSource::device_count() const { return nvml_ ? static_cast<int>(nvml_->devices().size()) : 0; }

void NvmlSource::sample(std::vector<DeviceReading>& out) {
  if (!nvml_) return;
  const auto& a = nvml_->api();
  const auto& handles = nvml_->devices();
  const bool processes = process_root_ > 0 && (a.process_list != nullptr || a.process_utilization != nullptr);
  std::vector<int> tree;
  if (processes) {
    for (pid_t pid : process_tree(process_root_)) tree.push_back(static_cast<int>(pid));
  }
  for (std::size_t i = 0; i < handles.size(); ++i) {
    const int index = static_cast<int>(i);
    if (!wanted_.empty() && std::find(wanted_.begin(), wanted_.end(), index) == wanted_.end()) continue;
    DeviceReading r;
    r.index = index;
    r.kind = DeviceKind::kCuda;
    r.name = names_[i];
    nvmlDevice_t h = handles[i];
    if (h == nullptr) {
      out.push_back(r);
      continue;
    }
    nvmlUtilization_t u{};
    if (a.utilization != nullptr && a.utilization(h, &u) == kNvmlSuccess) {
      r.utilization_percent = u.gpu;
      r.memory_utilization_percent = u.memory;
    }
    nvmlMemory_t m{};
    if (a.memory_info != nullptr && a.memory_info(h, &m) == kNvmlSuccess) {
      r.memory_used_mb = static_cast<double>(m.used) / (1 << 20);
      r.memory_total_mb = static_cast<double>(m.total) / (1 << 20);
    }
    unsigned value = 0;
    if (a.power_usage != nullptr && a.power_usage(h, &value) == kNvmlSuccess) r.power_w = value / 1000.0;
    if (a.temperature != nullptr && a.temperature(h, kNvmlTemperatureGpu, &value) == kNvmlSuccess)
      r.temperature_c = value;
    if (a.clock != nullptr && a.clock(h, kNvmlClockSm, &value) == kNvmlSuccess) r.sm_clock_mhz = value;
    if (a.clock != nullptr && a.clock(h, kNvmlClockMem, &value) == kNvmlSuccess) r.memory_clock_mhz = value;
    unsigned long long bits = 0;
    if (a.throttle_reasons != nullptr && a.throttle_reasons(h, &bits) == kNvmlSuccess) r.throttle_reasons = bits;
    if (a.total_energy != nullptr && a.total_energy(h, &bits) == kNvmlSuccess) r.energy_counter_j = bits / 1000.0;
    if (processes) read_processes(i, tree, r);
    out.push_back(r);
  }
}

// Memory: the sum over the tree's processes in the running-process list (none there: 0 MiB, a
// value NVML gave), absent when the list cannot be read or NVML cannot say for one of them.
// Utilisation: each of the tree's processes' mean SM utilisation over the samples since the last
// tick, summed (NOT_FOUND: no process ran a kernel, 0 %).
void NvmlSource::read_processes(std::size_t device, const std::vector<int>& tree, DeviceReading& r) {
  const auto& a = nvml_->api();
  nvmlDevice_t h = nvml_->devices()[device];
  const auto ours = [&](unsigned pid) { return std::find(tree.begin(), tree.end(), static_cast<int>(pid)) != tree.end(); };
  if (a.process_list != nullptr) {
    unsigned count = 0;
    nvmlReturn_t rc = a.process_list(h, &count, nullptr);
    std::vector<nvmlProcessInfo_v2_t> infos;
    if (rc == kNvmlErrorInsufficientSize) {
      infos.resize(count + 8);  // room for processes that start meanwhile
      count = static_cast<unsigned>(infos.size());
      rc = a.process_list(h, &count, infos.data());
    }
    if (rc == kNvmlSuccess) {
      double mb = 0;
      bool known = true;
      for (unsigned k = 0; k < count && k < infos.size(); ++k) {
        if (!ours(infos[k].pid)) continue;
        if (infos[k].usedGpuMemory == kNvmlValueNotAvailable) known = false;
        else mb += static_cast<double>(infos[k].usedGpuMemory) / (1 << 20);
      }
      if (known) r.process_memory_used_mb = mb;
    }
  }
  if (a.process_utilization != nullptr) {
    unsigned count = 0;
    nvmlReturn_t rc = a.process_utilization(h, nullptr, &count, last_seen_us_[device]);
    std::vector<nvmlProcessUtilizationSample_t> samples;
    if (rc == kNvmlErrorInsufficientSize) {
      samples.resize(count + 8);
      count = static_cast<unsigned>(samples.size());
      rc = a.process_utilization(h, samples.data(), &count, last_seen_us_[device]);
    }
    if (rc == kNvmlErrorNotFound) {
      r.process_utilization_percent = 0.0;
    } else if (rc == kNvmlSuccess) {
      std::map<unsigned, std::pair<double, int>> per_pid;  // pid → (sum of SM %, samples)
      for (unsigned k = 0; k < count && k < samples.size(); ++k) {
        last_seen_us_[device] = std::max(last_seen_us_[device], samples[k].timeStamp);
        if (!ours(samples[k].pid)) continue;
        per_pid[samples[k].pid].first += samples[k].smUtil;
        per_pid[samples[k].pid].second += 1;
      }
      double sum = 0;
      for (const auto& [pid, acc] : per_pid) sum += acc.first / acc.second;
      r.process_utilization_percent = std::min(100.0, sum);
    }
  }
}

void NvmlSource::close() { nvml_.reset(); }

}  // namespace plexus
