// What a monitoring session measured: per-device statistics, energy (and how it was obtained),
// and aggregates across GPUs. summarize() is pure so tests can feed scripted samples.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "monitor/reading.h"

namespace plexus {

// kCounter: the energy counter over the whole session; kCounterPower: the counter, with power
// integrated over the intervals where it reset (or was missing); kPowerIntegration: power only;
// kPartial: some of the session is not covered (the device was lost, its driver hung or stopped
// answering): energy_covered_s says how much is.
enum class EnergyMethod { kCounter, kCounterPower, kPowerIntegration, kPartial, kUnavailable };
// "counter", "counter+power", "power-integration", "partial", "unavailable"
const char* energy_method_name(EnergyMethod method);

struct DeviceSummary {
  int index = -1;  // -1: the host ("cpu")
  DeviceKind kind = DeviceKind::kCpu;
  std::string name;
  int samples = 0;
  std::optional<double> avg_power_w, max_power_w;  // avg is time-weighted (energy / duration)
  std::optional<double> energy_j;
  EnergyMethod energy_method = EnergyMethod::kUnavailable;
  std::optional<double> energy_covered_s;  // seconds of the session energy_j covers
  int energy_counter_resets = 0;           // counter steps backwards (a reset or wrap)
  std::optional<double> lost_at_s;         // the device stopped answering here (session time)
  int dropped_readings = 0;                // values outside physical bounds (plausibility.h)
  std::optional<double> idle_power_w, energy_above_idle_j;  // with an idle baseline
  std::optional<double> avg_utilization_percent, max_utilization_percent;
  std::optional<double> avg_memory_utilization_percent;
  std::optional<double> avg_memory_used_mb, max_memory_used_mb, memory_total_mb;
  std::optional<double> avg_temperature_c, max_temperature_c;
  std::optional<double> avg_sm_clock_mhz, avg_memory_clock_mhz;
  std::optional<std::uint64_t> throttle_reasons_seen;  // OR of every sample's mask
  std::optional<double> max_process_rss_mb;            // host only
  // The watched process tree on this GPU (DeviceReading::process_*); empty when not measured.
  std::optional<double> avg_process_memory_used_mb, max_process_memory_used_mb, avg_process_utilization_percent;
};

// Across GPUs (the host is not a GPU). Names as bench reports use them.
struct AggregateSummary {
  double total_avg_utilization = 0;  // mean over GPUs of each GPU's average utilisation
  double total_max_utilization = 0;  // highest utilisation any GPU reached
  double total_avg_memory_mb = 0;    // sum over GPUs of each GPU's average memory used
  std::vector<double> avg_utilization_per_gpu;  // GPU order
  std::vector<double> avg_memory_per_gpu_mb;
  bool any_gpu_active = false;                   // some GPU reached kActiveUtilizationPercent
  std::optional<double> total_energy_j;          // GPUs with energy, summed
  std::optional<double> total_energy_above_idle_j;
  std::optional<double> total_avg_power_w;
};

constexpr double kActiveUtilizationPercent = 1.0;

// Average power per device key ("0", "cpu") measured while idle, before the run.
using IdleBaseline = std::map<std::string, double>;

struct MonitorSummary {
  double duration_s = 0;  // first to last sample
  int samples = 0;
  double interval_ms = 0;  // the session's configured interval; summarize(): the mean spacing
  std::vector<DeviceSummary> devices;  // GPUs in index order, then the host
  AggregateSummary aggregate;
  std::optional<double> sampler_cpu_s;  // CPU time the sampler thread used
  std::optional<double> idle_baseline_s;
  std::vector<std::string> problems;  // e.g. a source abandoned after a call overran its limit
};

// Energy per interval between consecutive samples: the counter's step when both ends have a
// counter and the step is plausible (not backwards, not above kMaxPlausiblePowerW), else power
// integrated with the trapezoid rule when both ends have power, else the interval is not
// covered. The method says which were used (see EnergyMethod).
MonitorSummary summarize(const std::vector<Sample>& samples, const IdleBaseline& idle = {});

// Average power per device over `samples` (time-weighted), for an idle baseline.
IdleBaseline measure_baseline(const std::vector<Sample>& samples);

// {"duration_s", "samples", "interval_ms", "devices": [{"index", "name", "avg_power_w", ...}],
//  "host": {...} | null, "aggregate": {...}, "sampler": {...}}
Json to_json(const MonitorSummary& summary);

}  // namespace plexus
