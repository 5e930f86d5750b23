// Per-device busy fraction and memory in use over a measured run, from the executor's counters
// read between forward passes (SampledRunner) about as often as the monitor samples: what the
// HTML plots for devices the monitor cannot see (virtual ones).
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "core/json.h"
#include "exec/exec_stats.h"
#include "runtime/runner.h"

namespace plexus::bench {

class DeviceTimeline {
 public:
  // The counters at the start of the measured part (t = 0).
  void start(const ExecStats& stats);
  // The counters now (between forward passes); ignored before start().
  void add(const ExecStats& stats);
  // Started, and at least `interval_s` since the last point.
  bool due(double interval_s) const;
  // {"t_s": [...], "devices": {"virtual:0": {"busy_fraction": [...], "memory_in_use_mb": [...],
  //  "peak_memory_mb": [...]}}}: busy_fraction is the share of the time since the previous point
  // the device computed (null at t = 0); devices that hold nothing are left out. null when never
  // started (one engine on the host).
  Json to_json() const;

 private:
  struct Point {
    double t_s = 0;
    ExecStats stats;
  };
  std::optional<std::chrono::steady_clock::time_point> t0_;
  std::vector<Point> points_;
};

// A Runner that passes every call to `inner` and, after each forward pass, adds the executor's
// counters (`stats`, read on this thread while the executor is idle) to `timeline` when
// `interval_s` has passed since its last point — so the timeline covers the whole run, not only
// the end of each batch. Once time_forwards() gave it a clock, it also keeps each forward pass's
// [begin, end] on that clock (the monitor session's): the steps bench attributes energy to.
class SampledRunner : public Runner {
 public:
  SampledRunner(Runner& inner, std::function<ExecStats()> stats, DeviceTimeline& timeline, double interval_s)
      : inner_(inner), stats_(std::move(stats)), timeline_(timeline), interval_s_(interval_s) {}
  const ModelConfig& config() const override { return inner_.config(); }
  std::int64_t vocab_size() const override { return inner_.vocab_size(); }
  std::int64_t max_context() const override { return inner_.max_context(); }
  std::int64_t max_batch_tokens() const override { return inner_.max_batch_tokens(); }
  int open_sequence(std::int64_t capacity) override { return inner_.open_sequence(capacity); }
  void close_sequence(int slot) override { inner_.close_sequence(slot); }
  void copy_sequence(int from, int to, std::int64_t tokens) override { inner_.copy_sequence(from, to, tokens); }
  void forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) override;
  void time_forwards(std::function<double()> now_s) { now_s_ = std::move(now_s); }
  const std::vector<std::pair<double, double>>& forwards() const { return forwards_; }

 private:
  Runner& inner_;
  std::function<ExecStats()> stats_;
  DeviceTimeline& timeline_;
  double interval_s_;
  std::function<double()> now_s_;
  std::vector<std::pair<double, double>> forwards_;
};

}  // namespace plexus::bench
