// What both collective benchmarks share: the median of timed repeats, and how many repeats a
// message of a given size gets (many for small ones, whose latency is noisy; a few for large ones).
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace plexus {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// `asked` when given (> 0), else 256 MiB / bytes clamped to 5..200.
inline int repeats_for(std::size_t bytes, int asked) {
  if (asked > 0) return asked;
  return static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 5, 200));
}

}  // namespace plexus
