// One timestamped sample of every monitored device: the values a metric source could read.
// Anything a source cannot read stays empty (reported as unavailable, never as zero).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/device.h"

namespace plexus {

struct DeviceReading {
  int index = -1;  // accelerator number as in `plexus detect`; -1 for the host ("cpu")
  DeviceKind kind = DeviceKind::kCpu;
  std::string name;
  std::optional<double> utilization_percent;         // GPU busy time, or host CPU utilisation
  std::optional<double> memory_utilization_percent;  // memory controller busy time (GPUs)
  std::optional<double> memory_used_mb, memory_total_mb;  // MiB (device memory, or host RAM)
  std::optional<double> power_w;
  std::optional<double> temperature_c;
  std::optional<double> sm_clock_mhz, memory_clock_mhz;
  std::optional<std::uint64_t> throttle_reasons;  // NVML clock-event bit mask
  std::optional<double> energy_counter_j;          // monotonic energy counter, arbitrary origin
  std::optional<double> process_rss_mb;            // this process's resident memory (host only)
  // A watched process tree's share of this GPU (SourceOptions::process_root): device memory its
  // processes hold and the sum of their SM utilisation; empty when the driver cannot say.
  std::optional<double> process_memory_used_mb, process_utilization_percent;
  int dropped = 0;  // values outside physical bounds removed from this reading (plausibility.h)

  // "0", "1", ... or "cpu".
  std::string key() const { return index < 0 ? std::string("cpu") : std::to_string(index); }
};

struct Sample {
  double t_s = 0;      // seconds since the session started (steady clock), before the first query
  double t_end_s = 0;  // after the last source answered: every reading was taken in [t_s, t_end_s]
  std::vector<DeviceReading> readings;
};

}  // namespace plexus
