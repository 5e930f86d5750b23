// One NVML query per metric per device per tick; failures leave the field empty.
#include "monitor/nvml_source.h"
#include "backend/driver_string.h"

#include <algorithm>

namespace plexus {

NvmlSource::NvmlSource(std::string library, std::vector<int> devices)
    : library_path_(std::move(library)), wanted_(std::move(devices)) {}

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
  return true;
}

int NvmlSource::device_count() const { return nvml_ ? static_cast<int>(nvml_->devices().size()) : 0; }

void NvmlSource::sample(std::vector<DeviceReading>& out) {
  if (!nvml_) return;
  const auto& a = nvml_->api();
  const auto& handles = nvml_->devices();
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
    out.push_back(r);
  }
}

void NvmlSource::close() { nvml_.reset(); }

}  // namespace plexus
