// Oracles of GPT-2's LayerNorm and tanh GELU, in double.
#include "kernels/ref/layernorm_gelu_ref.h"

#include <cmath>
#include <numbers>

namespace plexus::ref {

void layernorm(const float* x, const float* w, const float* b, std::int64_t n, std::int64_t d, double eps, float* y) {
  for (std::int64_t t = 0; t < n; ++t) {
    const float* xr = x + t * d;
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < d; ++i) mean += xr[i];
    mean /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) {
      y[t * d + i] = static_cast<float>((xr[i] - mean) / std::sqrt(var + eps) * w[i] + b[i]);
    }
  }
}

void gelu_tanh(const float* x, std::int64_t n, float* out) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
  }
}

}  // namespace plexus::ref
