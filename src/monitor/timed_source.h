// A metric source whose calls run with a time limit (DeadlineRunner): a driver call that hangs
// abandons the source — later ticks get no readings from it (its devices show up as lost) — and
// never blocks the sampler, stop() or the process's exit.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "backend/deadline_runner.h"
#include "monitor/metric_source.h"

namespace plexus {

class TimedSource : public MetricSource {
 public:
  TimedSource(std::unique_ptr<MetricSource> inner, std::chrono::milliseconds limit);
  std::string name() const override { return name_; }
  bool open(std::string* why) override;
  void sample(std::vector<DeviceReading>& out) override;
  void close() override;
  // "nvml: no answer within 5000 ms; abandoned at t = 3.2 s" once a call overran, else "".
  const std::string& problem() const { return problem_; }
  // CPU time the helper thread spent in this source's calls (for the sampler's overhead).
  double cpu_seconds() const { return cpu_s_->load(); }

 private:
  std::shared_ptr<MetricSource> inner_;  // shared with jobs that may outlive this object
  std::shared_ptr<std::atomic<double>> cpu_s_ = std::make_shared<std::atomic<double>>(0.0);
  std::string name_;
  DeadlineRunner runner_;
  std::string problem_;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  void note_overrun(const char* call);
};

}  // namespace plexus
