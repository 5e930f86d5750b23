// Executor counters sampled per batch, reshaped as per-device series.
#include "bench/device_timeline.h"

#include <algorithm>

namespace plexus::bench {

void DeviceTimeline::start(const ExecStats& stats) {
  t0_ = std::chrono::steady_clock::now();
  points_.clear();
  points_.push_back({0.0, stats});
}

void DeviceTimeline::add(const ExecStats& stats) {
  if (!t0_) return;
  points_.push_back({std::chrono::duration<double>(std::chrono::steady_clock::now() - *t0_).count(), stats});
}

bool DeviceTimeline::due(double interval_s) const {
  if (!t0_ || points_.empty()) return false;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - *t0_).count() - points_.back().t_s >= interval_s;
}

void SampledRunner::forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  const double begin = now_s_ ? now_s_() : 0;
  inner_.forward(batch, rows, logits);
  if (now_s_) forwards_.emplace_back(begin, now_s_());
  if (timeline_.due(interval_s_)) timeline_.add(stats_());
}

Json DeviceTimeline::to_json() const {
  if (points_.empty()) return nullptr;
  Json t = Json::array();
  for (const Point& p : points_) t.push_back(p.t_s);
  Json devices = Json::object();
  const std::vector<DeviceRunStats>& layout = points_.front().stats.devices;
  for (std::size_t d = 0; d < layout.size(); ++d) {
    if (layout[d].holds.empty()) continue;  // computes and keeps nothing (the host beside devices that hold everything)
    Json busy = Json::array(), in_use = Json::array(), peak = Json::array();
    for (std::size_t i = 0; i < points_.size(); ++i) {
      const std::vector<DeviceRunStats>& now = points_[i].stats.devices;
      if (d >= now.size()) {
        busy.push_back(nullptr), in_use.push_back(nullptr), peak.push_back(nullptr);
        continue;
      }
      const double dt = i == 0 ? 0 : points_[i].t_s - points_[i - 1].t_s;
      const std::vector<DeviceRunStats>& before = points_[i == 0 ? 0 : i - 1].stats.devices;
      if (i == 0 || dt <= 0 || d >= before.size()) busy.push_back(nullptr);
      else busy.push_back(std::max(0.0, now[d].busy_s - before[d].busy_s) / dt);
      in_use.push_back(static_cast<double>(now[d].in_use_bytes) / 1048576.0);
      peak.push_back(static_cast<double>(now[d].peak_bytes) / 1048576.0);
    }
    devices[layout[d].name] = {{"busy_fraction", busy}, {"memory_in_use_mb", in_use}, {"peak_memory_mb", peak}};
  }
  return {{"t_s", t}, {"devices", devices}};
}

}  // namespace plexus::bench
