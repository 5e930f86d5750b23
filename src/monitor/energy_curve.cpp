// The cumulative energy curve over samples, interpolation and extrapolation, and the energy of
// time windows over a session's samples.
#include "monitor/energy_curve.h"

#include <algorithm>

namespace plexus {

std::vector<std::optional<double>> EnergyCurve::add(const Sample& sample) {
  std::vector<std::optional<double>> out;
  double joules = 0, power = 0;
  bool any_power = false;
  for (const DeviceReading& r : sample.readings) {
    const std::string key = r.key();
    auto it = std::find_if(devices_.begin(), devices_.end(), [&](const auto& d) { return d.first == key; });
    if (it == devices_.end()) {
      devices_.emplace_back(key, EnergySteps{});
      it = devices_.end() - 1;
    }
    const IntervalEnergy e = it->second.add(sample.t_s, r);
    if (r.power_w || r.energy_counter_j) any_energy_ = true;
    if (r.power_w) {
      power += *r.power_w;
      any_power = true;
    }
    if (e.joules) joules += *e.joules;
    out.push_back(e.joules);
  }
  cumulative_ += joules;
  Point p{sample.t_s, cumulative_, power};
  if (!any_power && !points_.empty() && sample.t_s > points_.back().t) p.p = joules / (sample.t_s - points_.back().t);
  points_.push_back(p);
  return out;
}

double EnergyCurve::energy_at(double t) const {
  if (points_.empty()) return 0;
  if (t <= points_.front().t) return points_.front().e;
  if (t >= points_.back().t) return points_.back().e + points_.back().p * (t - points_.back().t);
  const auto hi = std::upper_bound(points_.begin(), points_.end(), t, [](double v, const Point& q) { return v < q.t; });
  const Point& b = *hi;
  const Point& a = *(hi - 1);
  return a.e + (b.e - a.e) * (t - a.t) / (b.t - a.t);
}

double EnergyCurve::energy_between(double t0, double t1) const { return std::max(0.0, energy_at(t1) - energy_at(t0)); }

void EnergyCurve::forget_before(double t) {
  while (points_.size() >= 2 && points_[1].t <= t) points_.pop_front();
}

WindowEnergy energy_in_windows(const std::vector<Sample>& samples, std::span<const std::pair<double, double>> windows) {
  EnergyCurve curve;
  for (const Sample& s : samples) curve.add(s);
  WindowEnergy out;
  double joules = 0;
  for (const auto& [begin, end] : windows) {
    out.seconds += std::max(0.0, end - begin);
    joules += curve.energy_between(begin, end);
  }
  if (curve.any_energy()) out.energy_j = joules;
  return out;
}

}  // namespace plexus
