// Per-device busy fraction and memory in use over a measured run, from the executor's counters
// read after every batch: what the HTML plots for devices the monitor cannot see (virtual ones).
#pragma once
#include <chrono>
#include <optional>
#include <vector>

#include "core/json.h"
#include "exec/exec_stats.h"

namespace plexus::bench {

class DeviceTimeline {
 public:
  // The counters at the start of the measured part (t = 0).
  void start(const ExecStats& stats);
  // The counters now (after a batch); ignored before start().
  void add(const ExecStats& stats);
  // {"t_s": [...], "devices": {"virtual:0": {"busy_fraction": [...], "memory_in_use_mb": [...],
  //  "peak_memory_mb": [...]}}}: busy_fraction is the share of the time since the previous point
  // the device computed (null at t = 0). null when never started (one engine on the host).
  Json to_json() const;

 private:
  struct Point {
    double t_s = 0;
    ExecStats stats;
  };
  std::optional<std::chrono::steady_clock::time_point> t0_;
  std::vector<Point> points_;
};

}  // namespace plexus::bench
