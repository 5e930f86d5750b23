// The server's metrics in Prometheus' text exposition format (GET /metrics): requests by
// endpoint and status, tokens, latency histograms (time to first token, time per output token,
// request duration), the scheduler's running/waiting requests and KV-cache use, per-device power
// and energy, idle power, the load's time, energy, power and utilisation, joules per token (as
// attributed to requests, and over the load), and the process's resident memory. Thread-safe.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"  // scheduler.h's exceptions derive from RuntimeError
#include "serve/energy_ledger.h"
#include "serve/scheduler.h"

namespace plexus {

// Cumulative buckets (le), sum and count, as Prometheus histograms are.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double x);
  // "# HELP", "# TYPE" and the _bucket, _sum, _count lines.
  std::string render(const std::string& name, const std::string& help) const;
  std::int64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<std::int64_t> counts_;  // per bound, not cumulative; +Inf is count_
  double sum_ = 0;
  std::int64_t count_ = 0;
};

// What /metrics shows that the metrics do not count themselves.
struct MetricsSnapshot {
  std::optional<SchedulerStats> scheduler;  // nullopt while loading
  std::vector<DeviceEnergy> devices;
  std::optional<double> measured_j, attributed_j;
  std::optional<LoadTotals> load;
  std::optional<double> resident_bytes;
};

class Metrics {
 public:
  Metrics();
  void count_request(const std::string& endpoint, int status);
  // A generation request ended: its tokens and times (seconds).
  void record_generation(std::int64_t prompt_tokens, std::int64_t completion_tokens, double ttft_s, double time_s);
  std::string render(const MetricsSnapshot& snapshot) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::int64_t> requests_;
  std::int64_t prompt_tokens_ = 0, generation_tokens_ = 0;
  Histogram ttft_, tpot_, duration_;
};

// This process's resident memory in bytes (/proc/self/statm); nullopt when unreadable.
std::optional<double> process_resident_bytes();

// A label value escaped for the exposition format (backslash, quote, newline).
std::string prometheus_label(const std::string& value);

}  // namespace plexus
