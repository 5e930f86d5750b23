// Per-device statistics over a session's samples, energy by counter or trapezoid, aggregates.
#include "monitor/summary.h"

#include <algorithm>
#include <functional>

#include "monitor/energy_steps.h"

namespace plexus {

const char* energy_method_name(EnergyMethod method) {
  switch (method) {
    case EnergyMethod::kCounter: return "counter";
    case EnergyMethod::kCounterPower: return "counter+power";
    case EnergyMethod::kPowerIntegration: return "power-integration";
    case EnergyMethod::kPartial: return "partial";
    case EnergyMethod::kUnavailable: return "unavailable";
  }
  return "unavailable";
}

namespace {

// One device's readings in time order.
struct Series {
  std::vector<double> t;
  std::vector<const DeviceReading*> r;
};

using Field = std::function<std::optional<double>(const DeviceReading&)>;

struct Stats {
  std::optional<double> avg, max;
};

Stats stats_of(const Series& s, const Field& field) {
  double sum = 0, max = 0;
  int n = 0;
  for (const DeviceReading* r : s.r) {
    const auto v = field(*r);
    if (!v) continue;
    sum += *v;
    max = n == 0 ? *v : std::max(max, *v);
    ++n;
  }
  if (n == 0) return {};
  return {sum / n, max};
}

// Trapezoid over consecutive samples that both have power; returns {energy J, seconds covered}.
std::optional<std::pair<double, double>> integrate_power(const Series& s) {
  double energy = 0, covered = 0;
  bool any = false;
  for (std::size_t i = 1; i < s.r.size(); ++i) {
    const auto& a = s.r[i - 1]->power_w;
    const auto& b = s.r[i]->power_w;
    if (!a || !b) continue;
    const double dt = s.t[i] - s.t[i - 1];
    energy += (*a + *b) / 2 * dt;
    covered += dt;
    any = true;
  }
  if (!any) return std::nullopt;
  return std::make_pair(energy, covered);
}

struct Energy {
  double joules = 0, covered_s = 0;
  bool by_counter = false, by_power = false;
  int resets = 0, dropped = 0;
};

// Interval by interval: the counter's step where it is plausible, else the power trapezoid.
Energy account_energy(const Series& s) {
  Energy e;
  EnergySteps steps;
  for (std::size_t i = 0; i < s.r.size(); ++i) {
    const IntervalEnergy step = steps.add(s.t[i], *s.r[i]);
    if (step.reset) ++e.resets;
    if (!step.joules) continue;
    e.joules += *step.joules;
    e.covered_s += s.t[i] - s.t[i - 1];
    e.by_counter = e.by_counter || step.by_counter;
    e.by_power = e.by_power || step.by_power;
  }
  e.dropped = steps.dropped();
  return e;
}

bool has_any_value(const DeviceReading& r) {
  return r.power_w || r.energy_counter_j || r.utilization_percent || r.memory_used_mb || r.temperature_c || r.sm_clock_mhz;
}

// `session_span`: first to last sample of the whole session (a lost device's series ends early).
DeviceSummary summarize_device(const Series& s, const IdleBaseline& idle, double session_t0, double session_t1) {
  const DeviceReading& first = *s.r.front();
  DeviceSummary d;
  d.index = first.index;
  d.kind = first.kind;
  d.name = first.name;
  d.samples = static_cast<int>(s.r.size());
  const double span = session_t1 - session_t0;
  for (const DeviceReading* r : s.r) d.dropped_readings += r->dropped;
  // Lost: it answered, then gave no value (or no reading at all) up to the session's end.
  std::size_t last_alive = s.r.size();
  for (std::size_t i = s.r.size(); i-- > 0;) {
    if (has_any_value(*s.r[i])) {
      last_alive = i;
      break;
    }
  }
  if (last_alive < s.r.size() && (last_alive + 1 < s.r.size() || s.t.back() < session_t1)) {
    d.lost_at_s = s.t[last_alive] - session_t0;
  }

  const Stats power = stats_of(s, [](const DeviceReading& r) { return r.power_w; });
  d.max_power_w = power.max;
  const auto integrated = integrate_power(s);
  const Energy e = account_energy(s);
  d.energy_counter_resets = e.resets;
  d.dropped_readings += e.dropped;
  if (e.by_counter || e.by_power) {
    d.energy_j = e.joules;
    d.energy_covered_s = e.covered_s;
    const bool whole = e.covered_s >= span * (1 - 1e-9) - 1e-9;
    if (!whole) d.energy_method = EnergyMethod::kPartial;
    else if (e.by_counter && e.by_power) d.energy_method = EnergyMethod::kCounterPower;
    else if (e.by_counter) d.energy_method = EnergyMethod::kCounter;
    else d.energy_method = EnergyMethod::kPowerIntegration;
  }
  if (integrated && integrated->second > 0) d.avg_power_w = integrated->first / integrated->second;
  else if (d.energy_j && d.energy_covered_s && *d.energy_covered_s > 0) d.avg_power_w = *d.energy_j / *d.energy_covered_s;
  else d.avg_power_w = power.avg;
  if (const auto it = idle.find(first.key()); it != idle.end()) {
    d.idle_power_w = it->second;
    if (d.energy_j) d.energy_above_idle_j = *d.energy_j - it->second * d.energy_covered_s.value_or(span);
  }

  const Stats util = stats_of(s, [](const DeviceReading& r) { return r.utilization_percent; });
  d.avg_utilization_percent = util.avg;
  d.max_utilization_percent = util.max;
  d.avg_memory_utilization_percent = stats_of(s, [](const DeviceReading& r) { return r.memory_utilization_percent; }).avg;
  const Stats memory = stats_of(s, [](const DeviceReading& r) { return r.memory_used_mb; });
  d.avg_memory_used_mb = memory.avg;
  d.max_memory_used_mb = memory.max;
  d.memory_total_mb = stats_of(s, [](const DeviceReading& r) { return r.memory_total_mb; }).max;
  const Stats temperature = stats_of(s, [](const DeviceReading& r) { return r.temperature_c; });
  d.avg_temperature_c = temperature.avg;
  d.max_temperature_c = temperature.max;
  d.avg_sm_clock_mhz = stats_of(s, [](const DeviceReading& r) { return r.sm_clock_mhz; }).avg;
  d.avg_memory_clock_mhz = stats_of(s, [](const DeviceReading& r) { return r.memory_clock_mhz; }).avg;
  d.max_process_rss_mb = stats_of(s, [](const DeviceReading& r) { return r.process_rss_mb; }).max;
  const Stats process_memory = stats_of(s, [](const DeviceReading& r) { return r.process_memory_used_mb; });
  d.avg_process_memory_used_mb = process_memory.avg;
  d.max_process_memory_used_mb = process_memory.max;
  d.avg_process_utilization_percent = stats_of(s, [](const DeviceReading& r) { return r.process_utilization_percent; }).avg;
  for (const DeviceReading* r : s.r)
    if (r->throttle_reasons) d.throttle_reasons_seen = d.throttle_reasons_seen.value_or(0) | *r->throttle_reasons;
  return d;
}

std::map<std::string, Series> group(const std::vector<Sample>& samples, std::vector<std::string>& order) {
  std::map<std::string, Series> by_key;
  for (const Sample& sample : samples) {
    for (const DeviceReading& r : sample.readings) {
      const std::string key = r.key();
      auto [it, inserted] = by_key.try_emplace(key);
      if (inserted) order.push_back(key);
      it->second.t.push_back(sample.t_s);
      it->second.r.push_back(&r);
    }
  }
  return by_key;
}

}  // namespace

MonitorSummary summarize(const std::vector<Sample>& samples, const IdleBaseline& idle) {
  MonitorSummary out;
  out.samples = static_cast<int>(samples.size());
  if (samples.empty()) return out;
  out.duration_s = samples.back().t_s - samples.front().t_s;
  if (samples.size() >= 2) out.interval_ms = out.duration_s / static_cast<double>(samples.size() - 1) * 1e3;
  std::vector<std::string> order;
  const auto by_key = group(samples, order);
  for (const std::string& key : order) {
    out.devices.push_back(summarize_device(by_key.at(key), idle, samples.front().t_s, samples.back().t_s));
  }
  std::stable_sort(out.devices.begin(), out.devices.end(), [](const DeviceSummary& a, const DeviceSummary& b) {
    return (a.index < 0 ? 1 << 30 : a.index) < (b.index < 0 ? 1 << 30 : b.index);
  });

  AggregateSummary& agg = out.aggregate;
  int gpus = 0;
  double util_sum = 0, power_sum = 0;
  bool any_power = false;
  for (const DeviceSummary& d : out.devices) {
    if (d.index < 0) continue;
    ++gpus;
    const double util = d.avg_utilization_percent.value_or(0);
    const double memory = d.avg_memory_used_mb.value_or(0);
    agg.avg_utilization_per_gpu.push_back(util);
    agg.avg_memory_per_gpu_mb.push_back(memory);
    util_sum += util;
    agg.total_avg_memory_mb += memory;
    agg.total_max_utilization = std::max(agg.total_max_utilization, d.max_utilization_percent.value_or(0));
    if (d.max_utilization_percent.value_or(0) >= kActiveUtilizationPercent) agg.any_gpu_active = true;
    if (d.energy_j) agg.total_energy_j = agg.total_energy_j.value_or(0) + *d.energy_j;
    if (d.energy_above_idle_j)
      agg.total_energy_above_idle_j = agg.total_energy_above_idle_j.value_or(0) + *d.energy_above_idle_j;
    if (d.avg_power_w) {
      power_sum += *d.avg_power_w;
      any_power = true;
    }
  }
  if (gpus > 0) agg.total_avg_utilization = util_sum / gpus;
  if (any_power) agg.total_avg_power_w = power_sum;
  return out;
}

IdleBaseline measure_baseline(const std::vector<Sample>& samples) {
  IdleBaseline idle;
  const MonitorSummary s = summarize(samples);
  for (const DeviceSummary& d : s.devices)
    if (d.avg_power_w) idle[d.index < 0 ? "cpu" : std::to_string(d.index)] = *d.avg_power_w;
  return idle;
}

namespace {
template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json device_json(const DeviceSummary& d) {
  Json j{{"index", d.index < 0 ? Json("cpu") : Json(d.index)},
         {"kind", device_kind_name(d.kind)},
         {"name", d.name},
         {"samples", d.samples},
         {"avg_power_w", or_null(d.avg_power_w)},
         {"max_power_w", or_null(d.max_power_w)},
         {"energy_j", or_null(d.energy_j)},
         {"energy_method", energy_method_name(d.energy_method)},
         {"energy_covered_s", or_null(d.energy_covered_s)},
         {"energy_counter_resets", d.energy_counter_resets},
         {"lost_at_s", or_null(d.lost_at_s)},
         {"dropped_readings", d.dropped_readings},
         {"idle_power_w", or_null(d.idle_power_w)},
         {"energy_above_idle_j", or_null(d.energy_above_idle_j)},
         {"avg_utilization_percent", or_null(d.avg_utilization_percent)},
         {"max_utilization_percent", or_null(d.max_utilization_percent)},
         {"avg_memory_utilization_percent", or_null(d.avg_memory_utilization_percent)},
         {"avg_memory_used_mb", or_null(d.avg_memory_used_mb)},
         {"max_memory_used_mb", or_null(d.max_memory_used_mb)},
         {"memory_total_mb", or_null(d.memory_total_mb)},
         {"avg_temperature_c", or_null(d.avg_temperature_c)},
         {"max_temperature_c", or_null(d.max_temperature_c)},
         {"avg_sm_clock_mhz", or_null(d.avg_sm_clock_mhz)},
         {"avg_memory_clock_mhz", or_null(d.avg_memory_clock_mhz)},
         {"throttle_reasons_seen", or_null(d.throttle_reasons_seen)}};
  if (d.index < 0) j["max_process_rss_mb"] = or_null(d.max_process_rss_mb);
  // A watched command's processes on this GPU: present only where the driver reported them.
  if (d.avg_process_memory_used_mb || d.avg_process_utilization_percent) {
    j["process"] = {{"avg_memory_used_mb", or_null(d.avg_process_memory_used_mb)},
                    {"max_memory_used_mb", or_null(d.max_process_memory_used_mb)},
                    {"avg_utilization_percent", or_null(d.avg_process_utilization_percent)}};
  }
  return j;
}
}  // namespace

Json to_json(const MonitorSummary& s) {
  Json devices = Json::array();
  Json host = nullptr;
  for (const DeviceSummary& d : s.devices) {
    if (d.index < 0) host = device_json(d);
    else devices.push_back(device_json(d));
  }
  const AggregateSummary& a = s.aggregate;
  Json sampler{{"interval_ms", s.interval_ms},
               {"samples", s.samples},
               {"cpu_seconds", or_null(s.sampler_cpu_s)},
               {"cpu_percent_of_one_core",
                s.sampler_cpu_s && s.duration_s > 0 ? Json(*s.sampler_cpu_s / s.duration_s * 100) : Json(nullptr)}};
  return Json{{"duration_s", s.duration_s},
              {"samples", s.samples},
              {"interval_ms", s.interval_ms},
              {"idle_baseline_s", or_null(s.idle_baseline_s)},
              {"devices", devices},
              {"host", host},
              {"aggregate",
               {{"total_avg_utilization", a.total_avg_utilization},
                {"total_max_utilization", a.total_max_utilization},
                {"total_avg_memory_mb", a.total_avg_memory_mb},
                {"avg_utilization_per_gpu", a.avg_utilization_per_gpu},
                {"avg_memory_per_gpu_mb", a.avg_memory_per_gpu_mb},
                {"any_gpu_active", a.any_gpu_active},
                {"total_energy_j", or_null(a.total_energy_j)},
                {"total_energy_above_idle_j", or_null(a.total_energy_above_idle_j)},
                {"total_avg_power_w", or_null(a.total_avg_power_w)}}},
              {"sampler", sampler},
              {"problems", s.problems}};
}

}  // namespace plexus
