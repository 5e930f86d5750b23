// ROCm SMI queries per tick; failures leave the field empty.
#include "monitor/rocm_source.h"
#include "backend/driver_string.h"

#include <algorithm>

namespace plexus {

RocmSource::RocmSource(std::string library, const NvmlSource* nvml, std::vector<int> devices)
    : library_path_(std::move(library)), nvml_(nvml), wanted_(std::move(devices)) {}

bool RocmSource::open(std::string* why) {
  first_index_ = nvml_ != nullptr ? nvml_->device_count() : 0;
  rocm_ = RocmSmiLibrary::open(library_path_, why);
  return rocm_ != nullptr;
}

void RocmSource::sample(std::vector<DeviceReading>& out) {
  if (!rocm_) return;
  const auto& a = rocm_->api();
  for (std::uint32_t i = 0; i < rocm_->device_count(); ++i) {
    const int index = first_index_ + static_cast<int>(i);
    if (!wanted_.empty() && std::find(wanted_.begin(), wanted_.end(), index) == wanted_.end()) continue;
    DeviceReading r;
    r.index = index;
    r.kind = DeviceKind::kRocm;
    char text[128] = {};
    r.name = a.name != nullptr && a.name(i, text, sizeof text) == 0 ? driver_string(text, sizeof text) : "AMD GPU " + std::to_string(i);
    std::uint32_t busy = 0;
    if (a.busy_percent != nullptr && a.busy_percent(i, &busy) == 0) r.utilization_percent = busy;
    std::uint64_t total = 0, used = 0;
    if (a.memory_total != nullptr && a.memory_total(i, 0, &total) == 0) r.memory_total_mb = total / 1048576.0;
    if (a.memory_usage != nullptr && a.memory_usage(i, 0, &used) == 0) r.memory_used_mb = used / 1048576.0;
    std::uint64_t microwatts = 0;
    if (a.power_average != nullptr && a.power_average(i, 0, &microwatts) == 0) r.power_w = microwatts / 1e6;
    std::int64_t millidegrees = 0;
    if (a.temperature != nullptr && a.temperature(i, 0, 0, &millidegrees) == 0) r.temperature_c = millidegrees / 1000.0;
    std::uint64_t count = 0, timestamp = 0;
    float resolution_uj = 0;
    if (a.energy_count != nullptr && a.energy_count(i, &count, &resolution_uj, &timestamp) == 0 && resolution_uj > 0)
      r.energy_counter_j = static_cast<double>(count) * resolution_uj / 1e6;
    out.push_back(r);
  }
}

void RocmSource::close() { rocm_.reset(); }

}  // namespace plexus
