// Linear-interpolation percentiles (numpy's default) and the latency summary built on them.
#include "bench/percentiles.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace plexus::bench {

std::optional<double> percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  q = std::clamp(q, 0.0, 100.0);
  const double h = static_cast<double>(values.size() - 1) * q / 100.0;
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

LatencyStats latency_stats(const std::vector<double>& values) {
  LatencyStats s;
  s.count = static_cast<int>(values.size());
  if (values.empty()) return s;
  s.p50 = percentile(values, 50);
  s.p90 = percentile(values, 90);
  s.p99 = percentile(values, 99);
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

Json to_json(const LatencyStats& s) {
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  return {{"p50", opt(s.p50)}, {"p90", opt(s.p90)}, {"p99", opt(s.p99)}, {"mean", opt(s.mean)},
          {"min", opt(s.min)}, {"max", opt(s.max)}, {"count", s.count}};
}

}  // namespace plexus::bench
