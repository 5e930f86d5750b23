// A metric source for energy tests: devices with a constant, known power, reported as power
// readings or as an energy counter (power × seconds on the steady clock); sample() may be held.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "monitor/metric_source.h"

namespace plexus::testing {

struct ScriptedDevice {
  double power_w = 0;
  bool as_counter = false;  // energy counter instead of power
  bool silent = false;      // reports neither
};

class ScriptedSource : public MetricSource {
 public:
  explicit ScriptedSource(std::vector<ScriptedDevice> devices) : devices_(std::move(devices)) {}
  std::string name() const override { return "scripted"; }
  bool open(std::string*) override { return true; }
  void sample(std::vector<DeviceReading>& out) override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return !held_; });
    }
    ++samples_;
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      DeviceReading r;
      r.index = static_cast<int>(i);
      r.kind = DeviceKind::kCuda;
      r.name = "scripted " + std::to_string(i);
      r.utilization_percent = 50;
      if (devices_[i].silent) {
      } else if (devices_[i].as_counter) {
        r.energy_counter_j = devices_[i].power_w * t;
      } else {
        r.power_w = devices_[i].power_w;
      }
      out.push_back(r);
    }
  }
  void close() override {}

  // Shared with the test after the ledger took ownership.
  static std::atomic<int>& samples() { return samples_; }
  static void hold(bool held) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_ = held;
    }
    cv_.notify_all();
  }

 private:
  std::vector<ScriptedDevice> devices_;
  static inline std::atomic<int> samples_{0};
  static inline std::mutex mutex_;
  static inline std::condition_variable cv_;
  static inline bool held_ = false;
};

inline std::vector<std::unique_ptr<MetricSource>> scripted(std::vector<ScriptedDevice> devices) {
  std::vector<std::unique_ptr<MetricSource>> v;
  v.push_back(std::make_unique<ScriptedSource>(std::move(devices)));
  return v;
}

}  // namespace plexus::testing
