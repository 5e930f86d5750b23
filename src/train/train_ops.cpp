// TrainOps' default rope table, computed by the host into memory it can write (the CPU's).
#include "train/train_ops.h"

#include <cmath>

namespace plexus {

void TrainOps::rope_table(std::span<const double> inv_freq, std::int64_t T, float* cos, float* sin) {
  const auto half = static_cast<std::int64_t>(inv_freq.size());
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(t) * inv_freq[static_cast<std::size_t>(i)];
      cos[t * half + i] = static_cast<float>(std::cos(a));
      sin[t * half + i] = static_cast<float>(std::sin(a));
    }
  }
}

}  // namespace plexus
