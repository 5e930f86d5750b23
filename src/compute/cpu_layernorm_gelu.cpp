// GPT-2's two operations on the CPU: LayerNorm with bias and the tanh GELU (gelu_new). Plain
// loops threaded over rows; the oracles are kernels/ref/layernorm_gelu_ref.h.
#include <cmath>

#include "compute/cpu_ops.h"

namespace plexus {

void CpuOps::layernorm(const float* x, const float* w, const float* b, std::int64_t rows, std::int64_t d, float eps,
                       float* y) {
  pool_.parallel_for(rows, 1, [=](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * d;  // (d)
      float* yr = y + r * d;        // (d), may be xr
      double sum = 0, sq = 0;
      for (std::int64_t i = 0; i < d; ++i) sum += xr[i];
      const double mean = sum / static_cast<double>(d);
      for (std::int64_t i = 0; i < d; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
      const float m = static_cast<float>(mean);
      const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(d) + eps));
      for (std::int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * inv * w[i] + b[i];
    }
  });
}

void CpuOps::gelu_tanh(float* x, std::int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  pool_.parallel_for(n, 64, [=](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const float v = x[i];
      x[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    }
  });
}

}  // namespace plexus
