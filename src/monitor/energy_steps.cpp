// The counter-or-trapezoid rule of one interval, with the counter's plausibility filter.
#include "monitor/energy_steps.h"

#include <algorithm>

#include "monitor/plausibility.h"

namespace plexus {

IntervalEnergy EnergySteps::add(double t_s, const DeviceReading& r) {
  std::optional<double> counter = r.energy_counter_j;
  if (counter && good_counter_) {
    const double dt = t_s - *good_t_;
    if (*counter - *good_counter_ > kMaxPlausiblePowerW * std::max(dt, 1e-3)) {
      counter.reset();
      ++dropped_;
    }
  }
  if (counter) {
    good_t_ = t_s;
    good_counter_ = counter;
  }
  IntervalEnergy e;
  if (started_) {
    const double dt = t_s - prev_t_;
    bool counted = false;
    if (prev_counter_ && counter) {
      const double step = *counter - *prev_counter_;
      if (step >= 0) {
        e.joules = step;
        e.by_counter = true;
        counted = true;
      } else {
        e.reset = true;  // this interval from power, if there is any
      }
    }
    if (!counted && prev_power_ && r.power_w) {
      e.joules = (*prev_power_ + *r.power_w) / 2 * dt;
      e.by_power = true;
    }
  }
  started_ = true;
  prev_t_ = t_s;
  prev_counter_ = counter;
  prev_power_ = r.power_w;
  return e;
}

}  // namespace plexus
