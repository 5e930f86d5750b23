// Element-wise and per-row operations of the forward pass.
#include "kernels/cpu/ops.h"

#include <algorithm>
#include <cmath>

namespace plexus {

void rmsnorm(const IsaKernels& k, const float* x, const float* weight, std::int64_t n, std::int64_t d, float eps,
             float* y) {
  for (std::int64_t t = 0; t < n; ++t) {
    const float* xr = x + t * d;
    float* yr = y + t * d;
    const float ms = k.sum_squares(xr, d) / static_cast<float>(d);
    const float s = 1.0f / std::sqrt(ms + eps);
    for (std::int64_t i = 0; i < d; ++i) yr[i] = xr[i] * s * weight[i];
  }
}

void rope(float* x, std::int64_t n_heads, std::int64_t head_dim, const float* cos, const float* sin, bool interleaved,
          std::int64_t rotary_dim) {
  const std::int64_t half = (rotary_dim > 0 ? rotary_dim : head_dim) / 2;  // partial rotary: the first rotary_dim dims
  for (std::int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    if (interleaved) {  // pairs (2i, 2i+1) turn by angle i
      for (std::int64_t i = 0; i < half; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * cos[i] - x1 * sin[i];
        v[2 * i + 1] = x1 * cos[i] + x0 * sin[i];
      }
      continue;
    }
    for (std::int64_t i = 0; i < half; ++i) {
      const float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * cos[i] - x1 * sin[i];
      v[i + half] = x1 * cos[i] + x0 * sin[i];
    }
  }
}

void silu_mul(const IsaKernels& k, ThreadPool& pool, const float* gate, const float* up, float* out, std::int64_t n) {
  pool.parallel_for(n, 64, [&](std::int64_t b, std::int64_t e) { k.silu_mul(gate + b, up + b, out + b, e - b); });
}

void gelu_tanh_mul(ThreadPool& pool, const float* gate, const float* up, float* out, std::int64_t n) {
  // gelu_tanh(g) = g/2 · (1 + tanh(√(2/π) · (g + 0.044715 g³))), in f32 as PyTorch's f32 GELU.
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  pool.parallel_for(n, 256, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const float g = gate[i];
      out[i] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + 0.044715f * g * g * g))) * up[i];
    }
  });
}

void softcap(ThreadPool& pool, float* x, float cap, std::int64_t n) {
  pool.parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) x[i] = std::tanh(x[i] / cap) * cap;
  });
}

void softmax(const IsaKernels& k, float* x, std::int64_t n) {
  const float mx = *std::max_element(x, x + n);
  const float sum = k.exp_shift_sum(x, mx, n);
  k.scale(1.0f / sum, x, n);
}

void softmax_with_sink(const IsaKernels& k, float* x, std::int64_t n, float sink) {
  const float mx = std::max(*std::max_element(x, x + n), sink);
  const float sum = k.exp_shift_sum(x, mx, n) + std::exp(sink - mx);
  k.scale(1.0f / sum, x, n);
}

}  // namespace plexus
