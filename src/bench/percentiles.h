// Percentiles of latency samples: linear interpolation between order statistics, as numpy's
// default (`method="linear"`): for q in [0, 100], rank h = (n - 1) q / 100, value
// x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]) on the sorted samples.
#pragma once
#include <optional>
#include <vector>

#include "core/json.h"

namespace plexus::bench {

// nullopt for no samples; q outside [0, 100] is clamped.
std::optional<double> percentile(std::vector<double> values, double q);

struct LatencyStats {
  std::optional<double> p50, p90, p99, mean, min, max;
  int count = 0;
};
LatencyStats latency_stats(const std::vector<double>& values);

// {"p50", "p90", "p99", "mean", "min", "max", "count"}; null where there are no samples.
Json to_json(const LatencyStats& s);

}  // namespace plexus::bench
