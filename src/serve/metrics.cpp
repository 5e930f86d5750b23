// Prometheus text exposition of the server's metrics (serve/metrics.h).
#include "serve/metrics.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace plexus {

namespace {

// The shortest decimal that reads back as x.
std::string number(double x) {
  char buf[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

void header(std::ostringstream& o, const std::string& name, const char* type, const std::string& help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

void gauge(std::ostringstream& o, const std::string& name, const std::string& help, double value) {
  header(o, name, "gauge", help);
  o << name << ' ' << number(value) << '\n';
}

// One line per device that has the value (none, and no header, when no device has it).
void device_gauge(std::ostringstream& o, const std::string& name, const std::string& help, const std::vector<DeviceEnergy>& devices,
                  std::optional<double> DeviceEnergy::*field, double scale = 1) {
  bool any = false;
  for (const DeviceEnergy& d : devices) {
    if (!(d.*field)) continue;
    if (!any) header(o, name, "gauge", help);
    any = true;
    o << name << "{device=\"" << prometheus_label(d.key) << "\",name=\"" << prometheus_label(d.name) << "\"} "
      << number(*(d.*field) * scale) << '\n';
  }
}

}  // namespace

std::string prometheus_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}

void Histogram::observe(double x) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (x <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  }
  sum_ += x;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::ostringstream o;
  header(o, name, "histogram", help);
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    o << name << "_bucket{le=\"" << number(bounds_[i]) << "\"} " << cumulative << '\n';
  }
  o << name << "_bucket{le=\"+Inf\"} " << count_ << '\n';
  o << name << "_sum " << number(sum_) << '\n' << name << "_count " << count_ << '\n';
  return o.str();
}

Metrics::Metrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      tpot_({0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10}),
      duration_({0.01, 0.05, 0.1, 0.3, 0.5, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::record_generation(std::int64_t prompt_tokens, std::int64_t completion_tokens, double ttft_s, double time_s) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += prompt_tokens;
  generation_tokens_ += completion_tokens;
  if (completion_tokens > 0) ttft_.observe(ttft_s);
  if (completion_tokens > 1) tpot_.observe((time_s - ttft_s) / static_cast<double>(completion_tokens - 1));
  duration_.observe(time_s);
}

std::string Metrics::render(const MetricsSnapshot& s) const {
  std::ostringstream o;
  {
    std::lock_guard lock(mutex_);
    header(o, "plexus_requests_total", "counter", "HTTP requests answered, by endpoint and status code");
    for (const auto& [key, n] : requests_) {
      o << "plexus_requests_total{endpoint=\"" << prometheus_label(key.first) << "\",status=\"" << key.second << "\"} " << n << '\n';
    }
    header(o, "plexus_prompt_tokens_total", "counter", "prompt tokens of finished generation requests");
    o << "plexus_prompt_tokens_total " << prompt_tokens_ << '\n';
    header(o, "plexus_generation_tokens_total", "counter", "tokens generated for finished generation requests");
    o << "plexus_generation_tokens_total " << generation_tokens_ << '\n';
    o << ttft_.render("plexus_time_to_first_token_seconds", "time from arrival to the first generated token");
    o << tpot_.render("plexus_time_per_output_token_seconds", "time per generated token after the first");
    o << duration_.render("plexus_request_duration_seconds", "time from arrival to the last generated token");
  }
  if (s.scheduler) {
    const SchedulerStats& st = *s.scheduler;
    gauge(o, "plexus_requests_running", "sequences in the running batch (one per choice of a request)", st.running);
    gauge(o, "plexus_requests_waiting", "requests waiting to be admitted", st.waiting);
    gauge(o, "plexus_kv_cache_used_tokens", "KV-cache tokens reserved by running requests", static_cast<double>(st.kv_used_tokens));
    gauge(o, "plexus_kv_cache_budget_tokens", "KV-cache tokens of all running requests together at most",
          static_cast<double>(st.kv_budget_tokens));
    gauge(o, "plexus_kv_cache_usage_ratio", "KV-cache use (0..1)",
          st.kv_budget_tokens > 0 ? static_cast<double>(st.kv_used_tokens) / static_cast<double>(st.kv_budget_tokens) : 0);
    header(o, "plexus_prefix_cache_hits_total", "counter", "requests whose prompt began with a cached prefix");
    o << "plexus_prefix_cache_hits_total " << st.prefix_hits << '\n';
    header(o, "plexus_prefix_cache_misses_total", "counter", "requests whose prompt began with no cached prefix");
    o << "plexus_prefix_cache_misses_total " << st.prefix_misses << '\n';
    header(o, "plexus_prefix_cache_hit_tokens_total", "counter", "prompt tokens whose KV was copied from the cache, not run");
    o << "plexus_prefix_cache_hit_tokens_total " << st.prefix_hit_tokens << '\n';
    header(o, "plexus_prefix_cache_evictions_total", "counter", "cached prefixes evicted to make room");
    o << "plexus_prefix_cache_evictions_total " << st.prefix_evictions << '\n';
    gauge(o, "plexus_prefix_cache_sequences", "finished prompts whose KV cache is kept", static_cast<double>(st.prefix_cached_sequences));
    gauge(o, "plexus_prefix_cache_tokens", "KV-cache tokens the cached prompts hold", static_cast<double>(st.prefix_cached_tokens));
    header(o, "plexus_scheduler_steps_total", "counter", "forward steps the scheduler ran");
    o << "plexus_scheduler_steps_total " << st.steps << '\n';
    header(o, "plexus_scheduler_busy_seconds_total", "counter", "time the scheduler spent in forwards");
    o << "plexus_scheduler_busy_seconds_total " << number(st.busy_s) << '\n';
    header(o, "plexus_scheduler_host_seconds_total", "counter",
           "host time of the steps outside their forwards (batching, sampling, streaming)");
    o << "plexus_scheduler_host_seconds_total " << number(st.host_s) << '\n';
    if (st.steps > 0) {
      gauge(o, "plexus_scheduler_host_seconds_per_step", "host time per step since the start (the two above)",
            st.host_s / static_cast<double>(st.steps));
    }
    header(o, "plexus_requests_finished_total", "counter", "generation requests ended, by how");
    o << "plexus_requests_finished_total{reason=\"finished\"} " << st.finished << '\n'
      << "plexus_requests_finished_total{reason=\"cancelled\"} " << st.cancelled << '\n'
      << "plexus_requests_finished_total{reason=\"failed\"} " << st.failed << '\n';
  }
  if (!s.devices.empty()) {
    header(o, "plexus_device_power_watts", "gauge", "latest power reading per device");
    for (const DeviceEnergy& d : s.devices) {
      if (d.power_w) {
        o << "plexus_device_power_watts{device=\"" << prometheus_label(d.key) << "\",name=\"" << prometheus_label(d.name)
          << "\"} " << number(*d.power_w) << '\n';
      }
    }
    header(o, "plexus_device_energy_joules", "gauge", "energy per device since the server started");
    for (const DeviceEnergy& d : s.devices) {
      if (d.energy_j) {
        o << "plexus_device_energy_joules{device=\"" << prometheus_label(d.key) << "\",name=\"" << prometheus_label(d.name)
          << "\"} " << number(*d.energy_j) << '\n';
      }
    }
  }
  if (s.measured_j) gauge(o, "plexus_energy_measured_joules", "energy of all devices since the server started", *s.measured_j);
  std::int64_t generated = 0;
  {
    std::lock_guard lock(mutex_);
    generated = generation_tokens_;
  }
  if (s.attributed_j) {
    gauge(o, "plexus_energy_attributed_joules", "energy shared out to requests (their usage.energy_j) so far", *s.attributed_j);
    if (generated > 0) {
      gauge(o, "plexus_energy_joules_per_token", "energy shared out to requests per generated token",
            *s.attributed_j / static_cast<double>(generated));
    }
  }
  device_gauge(o, "plexus_idle_power_watts", "mean power reading per device before the first request", s.devices,
               &DeviceEnergy::idle_power_w);
  if (s.load) {
    header(o, "plexus_load_seconds_total", "counter", "time some request was in flight (running or waiting): the load");
    o << "plexus_load_seconds_total " << number(s.load->seconds) << '\n';
    if (s.load->energy_j) {
      gauge(o, "plexus_load_energy_joules", "energy of all devices over the load", *s.load->energy_j);
      if (generated > 0) {
        gauge(o, "plexus_load_joules_per_token", "energy over the load per generated token",
              *s.load->energy_j / static_cast<double>(generated));
      }
    }
  }
  device_gauge(o, "plexus_load_average_power_watts", "mean power reading per device during the load", s.devices,
               &DeviceEnergy::load_power_w);
  device_gauge(o, "plexus_load_utilization_ratio", "mean utilisation reading per device during the load (0..1)", s.devices,
               &DeviceEnergy::load_utilization_percent, 0.01);
  if (s.resident_bytes) gauge(o, "plexus_process_resident_memory_bytes", "resident memory of the server process", *s.resident_bytes);
  return o.str();
}

std::optional<double> process_resident_bytes() {
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(f >> size >> resident)) return std::nullopt;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace plexus
