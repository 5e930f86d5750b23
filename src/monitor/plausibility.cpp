// The bounds: generous (no real reading comes near them) so that only faults are dropped.
#include "monitor/plausibility.h"

namespace plexus {

namespace {

int keep_within(std::optional<double>& v, double lo, double hi) {
  if (!v || (*v >= lo && *v <= hi)) return 0;  // NaN fails both comparisons and is dropped
  v.reset();
  return 1;
}

}  // namespace

int drop_implausible(DeviceReading& r) {
  constexpr double kMaxMemoryMb = 64.0 * 1024 * 1024;  // 64 TiB
  int n = 0;
  n += keep_within(r.utilization_percent, 0, 100);
  n += keep_within(r.memory_utilization_percent, 0, 100);
  n += keep_within(r.memory_total_mb, 0, kMaxMemoryMb);
  n += keep_within(r.memory_used_mb, 0, r.memory_total_mb.value_or(kMaxMemoryMb));
  n += keep_within(r.power_w, 0, kMaxPlausiblePowerW);
  n += keep_within(r.temperature_c, -60, 200);
  n += keep_within(r.sm_clock_mhz, 0, 20000);
  n += keep_within(r.memory_clock_mhz, 0, 50000);
  n += keep_within(r.energy_counter_j, 0, 1e13);  // ~300 years at 1 kW
  n += keep_within(r.process_rss_mb, 0, kMaxMemoryMb);
  r.dropped += n;
  return n;
}

}  // namespace plexus
