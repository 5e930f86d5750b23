// Energy of one device interval by interval, as its readings arrive: the energy counter's step
// where both ends have a plausible counter, else power integrated with the trapezoid rule. The
// one rule behind summarize() (monitor/summary.h) and the server's energy ledger.
#pragma once
#include <optional>

#include "monitor/reading.h"

namespace plexus {

struct IntervalEnergy {
  std::optional<double> joules;  // nullopt: the interval is not covered
  bool by_counter = false, by_power = false;
  bool reset = false;  // the counter stepped backwards (a reset or wrap)
};

class EnergySteps {
 public:
  // The energy from the previous reading (at its time) to this one at `t_s`; the first reading
  // gives an empty interval. A counter value that jumps up faster than any device draws power
  // (kMaxPlausiblePowerW) is a fault: dropped, and the next one is compared with the last good one.
  IntervalEnergy add(double t_s, const DeviceReading& r);
  int dropped() const { return dropped_; }

 private:
  bool started_ = false;
  double prev_t_ = 0;
  std::optional<double> prev_counter_, prev_power_;
  std::optional<double> good_t_, good_counter_;
  int dropped_ = 0;
};

}  // namespace plexus
