// What one benchmark run measured, as the result's JSON sections: throughput, latency
// percentiles, energy, per-GPU and host statistics from the monitor, and the sample timeline.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "monitor/energy_curve.h"
#include "monitor/reading.h"
#include "monitor/summary.h"
#include "runtime/decode_steps.h"

namespace plexus::bench {

// One measured request. Times count from the start of its batch (samples of one batch share it).
struct SampleTiming {
  std::int64_t prompt_tokens = 0, output_tokens = 0;
  double ttft_ms = 0;  // start → first output token
  double e2e_ms = 0;   // start → last output token
};

struct RunTimings {
  std::vector<SampleTiming> samples;
  double wall_s = 0;  // the measured part: first batch start → last batch end
  double decode_s = 0;  // of wall_s, the batches' decode loops
  DecodeSteps steps;    // their steps and the time in forwards
};

// tpot_ms of one sample: (e2e − ttft) / (output_tokens − 1); none with fewer than 2 tokens.
std::vector<double> tpot_values(const std::vector<SampleTiming>& samples);

// {"tokens_per_s", "total_tokens_per_s", "samples_per_s", "output_tokens", "prompt_tokens",
//  "samples", "wall_s", "decode_steps", "host_ms_per_step" (null without decode steps)}
Json throughput_json(const RunTimings& t);
// {"ttft_ms": {p50, p90, p99, mean, min, max, count}, "tpot_ms": {...}, "e2e_ms": {...}}
Json latency_json(const RunTimings& t);
// {"total_j", "gpu_j", "j_per_token", "tokens_per_j", "method", "avg_power_w",
//  "avg_utilization_percent", "duration_s", "idle_baseline_s", "idle_power_w", "above_idle_j",
//  "j_per_token_above_idle", "tokens_per_j_above_idle", "attributed_j", "attributed_s",
//  "j_per_token_attributed", "devices": {"gpu_0": {...}, "cpu": {...}}}; null where unmeasured.
// The session is the load (total_j: the whole run); `forwards` is the energy of its forward
// passes alone, what serve attributes to requests (null: not timed, the attributed keys are null).
Json energy_json(const MonitorSummary& s, std::int64_t output_tokens, const WindowEnergy* forwards = nullptr);
// Why no device reported energy (energy.note of a run whose method is "unavailable"): the GPU
// power sources that did not open (`unavailable`, as MonitorSession::unavailable() lists them)
// and the host's RAPL package counter (`powercap_root` missing, or present but unreadable).
std::string energy_unavailable_note(const std::vector<std::string>& unavailable, const std::string& powercap_root);
// {"gpu_0": {"name", "utilization_percent", "memory_used_mb", "memory_total_mb", "memory_percent",
//  "temperature_c", "power_draw_w", "max_…", "energy_j"}, ...}; {} without GPUs.
Json gpu_stats_json(const MonitorSummary& s);
// The host's averages and maxima (CPU utilisation, memory, process RSS, RAPL power), or null.
Json host_stats_json(const MonitorSummary& s);
// What every engine's result holds from its monitor session, the same for each: energy.note where
// result["energy"] says "unavailable", gpu_stats, host_stats, aggregates and "monitor"
// (duration_s, samples, interval_ms, unavailable_sources, sampler). `result["energy"]` is set.
void add_monitor_results(Json& result, const MonitorSummary& s, const std::vector<std::string>& unavailable, int interval_ms);
// {"t_s": [...], "devices": {"gpu_0": {"utilization_percent": [...], "power_w": [...],
//  "memory_used_mb": [...]}, "cpu": {...}}}: every sample, null where a value was unreadable.
Json timeline_json(const std::vector<Sample>& samples);

// "gpu_0", "gpu_1", ... for GPUs, "cpu" for the host.
std::string device_label(int index);

}  // namespace plexus::bench
