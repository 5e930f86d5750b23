// All devices' cumulative energy E(t) as samples arrive (each device interval by interval with
// EnergySteps), linear between samples: the energy of any window [a, b] is E(b) − E(a). The one
// curve behind the server's energy ledger (steps and the load) and bench's energy of its forward
// passes (energy_in_windows).
#pragma once
#include <cstddef>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "monitor/energy_steps.h"
#include "monitor/reading.h"

namespace plexus {

class EnergyCurve {
 public:
  // Adds a sample (later than the previous one); returns each reading's energy over the interval
  // since its device's previous reading, in the sample's reading order (nullopt: not covered).
  std::vector<std::optional<double>> add(const Sample& sample);
  // E(t): linear between the samples around t; before the first kept sample, its value; past the
  // last one, extrapolated with the last sample's power (the readings' sum, else the last
  // interval's mean power). 0 without samples.
  double energy_at(double t) const;
  // E over [t0, t1], never negative.
  double energy_between(double t0, double t1) const;
  double cumulative() const { return cumulative_; }  // all devices since the first sample
  bool any_energy() const { return any_energy_; }    // some reading had power or an energy counter
  bool empty() const { return points_.empty(); }
  double last_t() const { return points_.empty() ? 0 : points_.back().t; }
  // Forgets the points before the last one at or before `t` (E(t') for t' ≥ t is unchanged).
  void forget_before(double t);
  std::size_t size() const { return points_.size(); }

 private:
  struct Point {
    double t = 0, e = 0, p = 0;  // time, E, power to extrapolate with
  };
  std::vector<std::pair<std::string, EnergySteps>> devices_;  // by reading key, first-seen order
  std::deque<Point> points_;
  double cumulative_ = 0;
  bool any_energy_ = false;
};

// The energy of `samples` inside `windows` (each [begin, end] in seconds on the samples' clock,
// not overlapping), and the windows' seconds: what bench attributes to its forward passes.
struct WindowEnergy {
  double seconds = 0;
  std::optional<double> energy_j;  // nullopt when no reading has power or an energy counter
};
WindowEnergy energy_in_windows(const std::vector<Sample>& samples, std::span<const std::pair<double, double>> windows);

}  // namespace plexus
