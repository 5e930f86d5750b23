// Throughput, latency and energy figures of a run, and the monitor's statistics reshaped for
// benchmark reports.
#include "bench/bench_metrics.h"

#include <filesystem>
#include <map>

#include "bench/percentiles.h"

namespace plexus::bench {

namespace {

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::optional<double> ratio(std::optional<double> num, std::optional<double> den) {
  if (!num || !den || *den <= 0) return std::nullopt;
  return *num / *den;
}

}  // namespace

std::string device_label(int index) { return index < 0 ? std::string("cpu") : "gpu_" + std::to_string(index); }

std::vector<double> tpot_values(const std::vector<SampleTiming>& samples) {
  std::vector<double> v;
  for (const SampleTiming& s : samples) {
    if (s.output_tokens >= 2) v.push_back((s.e2e_ms - s.ttft_ms) / static_cast<double>(s.output_tokens - 1));
  }
  return v;
}

Json throughput_json(const RunTimings& t) {
  std::int64_t out = 0, prompt = 0;
  for (const SampleTiming& s : t.samples) out += s.output_tokens, prompt += s.prompt_tokens;
  const double wall = t.wall_s;
  auto per_s = [&](double n) { return wall > 0 ? Json(n / wall) : Json(nullptr); };
  return {{"tokens_per_s", per_s(static_cast<double>(out))},
          {"total_tokens_per_s", per_s(static_cast<double>(out + prompt))},
          {"samples_per_s", per_s(static_cast<double>(t.samples.size()))},
          {"output_tokens", out},
          {"prompt_tokens", prompt},
          {"samples", t.samples.size()},
          {"wall_s", wall},
          {"decode_steps", t.steps.count},
          {"host_ms_per_step", t.steps.count > 0 ? Json(t.steps.host_ms_per_step(t.decode_s)) : Json(nullptr)}};
}

Json latency_json(const RunTimings& t) {
  std::vector<double> ttft, e2e;
  for (const SampleTiming& s : t.samples) ttft.push_back(s.ttft_ms), e2e.push_back(s.e2e_ms);
  return {{"ttft_ms", to_json(latency_stats(ttft))},
          {"tpot_ms", to_json(latency_stats(tpot_values(t.samples)))},
          {"e2e_ms", to_json(latency_stats(e2e))}};
}

Json energy_json(const MonitorSummary& s, std::int64_t output_tokens, const WindowEnergy* forwards) {
  std::optional<double> total, gpu, above, idle_power, avg_power, utilization;
  int gpus_with_utilization = 0;
  std::string method;
  bool mixed = false;
  Json devices = Json::object();
  auto add = [](std::optional<double>& acc, const std::optional<double>& v) {
    if (v) acc = acc.value_or(0) + *v;
  };
  for (const DeviceSummary& d : s.devices) {
    if (d.index >= 0 && d.avg_utilization_percent) {
      add(utilization, d.avg_utilization_percent);
      ++gpus_with_utilization;
    }
    const std::string m = energy_method_name(d.energy_method);
    devices[device_label(d.index)] = {{"energy_j", opt(d.energy_j)},
                                      {"method", m},
                                      {"avg_power_w", opt(d.avg_power_w)},
                                      {"utilization_percent", opt(d.avg_utilization_percent)},
                                      {"idle_power_w", opt(d.idle_power_w)},
                                      {"above_idle_j", opt(d.energy_above_idle_j)}};
    if (!d.energy_j) continue;
    add(total, d.energy_j);
    if (d.index >= 0) add(gpu, d.energy_j);
    add(above, d.energy_above_idle_j);
    add(idle_power, d.idle_power_w);
    add(avg_power, d.avg_power_w);
    if (method.empty()) method = m;
    else if (method != m) mixed = true;
  }
  if (method.empty()) method = "unavailable";
  if (mixed) method = "mixed";
  if (utilization) *utilization /= gpus_with_utilization;  // the GPUs' mean
  const std::optional<double> tokens = static_cast<double>(output_tokens);
  // The forward passes' energy (nullopt when not timed or not measured) and J/token of it.
  Json attributed = nullptr, attributed_per_token = nullptr;
  if (forwards && forwards->energy_j) {
    attributed = *forwards->energy_j;
    if (output_tokens > 0) attributed_per_token = *forwards->energy_j / static_cast<double>(output_tokens);
  }
  return {{"total_j", opt(total)},
          {"gpu_j", opt(gpu)},
          {"j_per_token", opt(ratio(total, tokens))},
          {"tokens_per_j", opt(ratio(tokens, total))},
          {"method", method},
          {"avg_power_w", opt(avg_power)},
          {"avg_utilization_percent", opt(utilization)},
          {"duration_s", s.duration_s},
          {"idle_baseline_s", opt(s.idle_baseline_s)},
          {"idle_power_w", opt(idle_power)},
          {"above_idle_j", opt(above)},
          {"j_per_token_above_idle", opt(ratio(above, tokens))},
          {"tokens_per_j_above_idle", opt(ratio(tokens, above))},
          {"attributed_j", attributed},
          {"attributed_s", forwards ? Json(forwards->seconds) : Json(nullptr)},
          {"j_per_token_attributed", attributed_per_token},
          {"devices", devices}};
}

std::string energy_unavailable_note(const std::vector<std::string>& unavailable, const std::string& powercap_root) {
  std::string gpus;
  for (const std::string& u : unavailable) gpus += (gpus.empty() ? "" : "; ") + u;
  std::error_code ec;
  const std::string host = std::filesystem::exists(powercap_root, ec)
                               ? "the host's RAPL package counter under " + powercap_root + " is not readable (root only on recent kernels)"
                               : "the host has no RAPL counter (" + powercap_root + " does not exist: usual in a virtual machine)";
  return "Energy unavailable: no power source on this host — " +
         (gpus.empty() ? std::string("no GPU reports power") : "no GPU power (" + gpus + ")") + ", and " + host +
         ". Energy is never estimated; docs/benchmarks.md says which sources plexus reads.";
}

void add_monitor_results(Json& result, const MonitorSummary& s, const std::vector<std::string>& unavailable, int interval_ms) {
  if (result["energy"]["method"] == "unavailable") result["energy"]["note"] = energy_unavailable_note(unavailable, "/sys/class/powercap");
  result["gpu_stats"] = gpu_stats_json(s);
  result["host_stats"] = host_stats_json(s);
  const Json monitor = to_json(s);
  result["aggregates"] = monitor["aggregate"];
  result["monitor"] = {{"duration_s", s.duration_s},
                       {"samples", s.samples},
                       {"interval_ms", interval_ms},
                       {"unavailable_sources", unavailable},
                       {"sampler", monitor["sampler"]}};
}

Json gpu_stats_json(const MonitorSummary& s) {
  Json out = Json::object();
  for (const DeviceSummary& d : s.devices) {
    if (d.index < 0) continue;
    std::optional<double> percent;
    if (d.avg_memory_used_mb && d.memory_total_mb && *d.memory_total_mb > 0) percent = 100 * *d.avg_memory_used_mb / *d.memory_total_mb;
    out[device_label(d.index)] = {{"name", d.name},
                                  {"kind", device_kind_name(d.kind)},
                                  {"utilization_percent", opt(d.avg_utilization_percent)},
                                  {"memory_used_mb", opt(d.avg_memory_used_mb)},
                                  {"memory_total_mb", opt(d.memory_total_mb)},
                                  {"memory_percent", opt(percent)},
                                  {"temperature_c", opt(d.avg_temperature_c)},
                                  {"power_draw_w", opt(d.avg_power_w)},
                                  {"max_utilization_percent", opt(d.max_utilization_percent)},
                                  {"max_memory_used_mb", opt(d.max_memory_used_mb)},
                                  {"max_temperature_c", opt(d.max_temperature_c)},
                                  {"max_power_draw_w", opt(d.max_power_w)},
                                  {"energy_j", opt(d.energy_j)},
                                  {"samples", d.samples}};
  }
  return out;
}

Json host_stats_json(const MonitorSummary& s) {
  for (const DeviceSummary& d : s.devices) {
    if (d.index >= 0) continue;
    return {{"name", d.name},
            {"cpu_utilization_percent", opt(d.avg_utilization_percent)},
            {"max_cpu_utilization_percent", opt(d.max_utilization_percent)},
            {"memory_used_mb", opt(d.avg_memory_used_mb)},
            {"memory_total_mb", opt(d.memory_total_mb)},
            {"max_process_rss_mb", opt(d.max_process_rss_mb)},
            {"power_draw_w", opt(d.avg_power_w)},
            {"energy_j", opt(d.energy_j)},
            {"energy_method", energy_method_name(d.energy_method)},
            {"samples", d.samples}};
  }
  return nullptr;
}

Json timeline_json(const std::vector<Sample>& samples) {
  Json t = Json::array();
  std::map<std::string, Json> per;  // label → {"utilization_percent": [...], ...}
  std::vector<std::string> order;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    t.push_back(samples[i].t_s);
    for (const DeviceReading& r : samples[i].readings) {
      const std::string label = device_label(r.index);
      if (!per.count(label)) {
        order.push_back(label);
        Json empty = Json::array();
        for (std::size_t k = 0; k < i; ++k) empty.push_back(nullptr);
        per[label] = {{"utilization_percent", empty}, {"power_w", empty}, {"memory_used_mb", empty}};
      }
      Json& d = per[label];
      d["utilization_percent"].push_back(opt(r.utilization_percent));
      d["power_w"].push_back(opt(r.power_w));
      d["memory_used_mb"].push_back(opt(r.memory_used_mb));
    }
    for (auto& [label, d] : per) {  // a device missing from this sample
      while (d["power_w"].size() < i + 1) {
        for (const char* k : {"utilization_percent", "power_w", "memory_used_mb"}) d[k].push_back(nullptr);
      }
    }
  }
  Json devices = Json::object();
  for (const std::string& l : order) devices[l] = per[l];
  return {{"t_s", t}, {"devices", devices}};
}

}  // namespace plexus::bench
