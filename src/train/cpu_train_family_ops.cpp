// CpuTrainOps' ops of the Gemma and Phi-3 training step (train_ops.h "Gemma and Phi-3"): GeGLU
// and its backward, Gemma 2's soft-capped cross-entropy, the element-wise scale and shift, and the partial-rotary rope. Element-wise
// and row-wise, split over the pool by elements or rows (bitwise independent of the thread count).
#include <algorithm>
#include <cmath>
#include <vector>

#include "train/cpu_train_ops.h"

namespace plexus {

namespace {

constexpr float kGeluTanhC = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluTanhA = 0.044715f;

}  // namespace

void CpuTrainOps::gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  pool_.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const float g = gate[i];
      out[i] = 0.5f * g * (1.0f + std::tanh(kGeluTanhC * (g + kGeluTanhA * g * g * g))) * up[i];
    }
  });
}

void CpuTrainOps::gelu_tanh_mul_backward(const float* dout, const float* gate, const float* up, float* dgate,
                                         float* dup, std::int64_t n) {
  pool_.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const float g = gate[i], u = up[i], d = dout[i];
      const float th = std::tanh(kGeluTanhC * (g + kGeluTanhA * g * g * g));
      const float gelu = 0.5f * g * (1.0f + th);
      const float dgelu = 0.5f * (1.0f + th) + 0.5f * g * (1.0f - th * th) * kGeluTanhC * (1.0f + 3.0f * kGeluTanhA * g * g);
      dgate[i] = d * u * dgelu;
      dup[i] = d * gelu;
    }
  });
}

double CpuTrainOps::softcap_cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                                          float grad_scale, float cap) {
  const auto rows = static_cast<std::int64_t>(targets.size());
  std::vector<double> row_loss(static_cast<std::size_t>(rows));
  pool_.parallel_for(rows, 1, [&](std::int64_t r0, std::int64_t r1) {
    std::vector<float> th(static_cast<std::size_t>(vocab));
    for (std::int64_t r = r0; r < r1; ++r) {
      float* l = logits + r * vocab;
      for (std::int64_t j = 0; j < vocab; ++j) {  // l = c·tanh(z / c), th its tanh
        th[static_cast<std::size_t>(j)] = std::tanh(l[j] / cap);
        l[j] = cap * th[static_cast<std::size_t>(j)];
      }
      const std::int32_t target = targets[static_cast<std::size_t>(r)];
      const float mx = *std::max_element(l, l + vocab);
      const float picked = l[target];
      const float sum = k_.exp_shift_sum(l, mx, vocab);  // l = exp(l − mx)
      row_loss[static_cast<std::size_t>(r)] = std::log(static_cast<double>(sum)) + mx - picked;
      const float inv = grad_scale / sum;
      for (std::int64_t j = 0; j < vocab; ++j) {
        const float t = th[static_cast<std::size_t>(j)];
        l[j] = (l[j] * inv - (j == target ? grad_scale : 0.0f)) * (1.0f - t * t);
      }
    }
  });
  double loss = 0;
  for (const double x : row_loss) loss += x;
  return loss;
}

void CpuTrainOps::scale(float* x, float s, std::int64_t n) {
  pool_.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) x[i] *= s;
  });
}

void CpuTrainOps::add_constant(const float* x, float c, float* y, std::int64_t n) {
  pool_.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) y[i] = x[i] + c;
  });
}

void CpuTrainOps::rope_partial(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                               std::int64_t rotary_dim, const float* cos, const float* sin, bool inverse) {
  const std::int64_t table = head_dim / 2, half = rotary_dim / 2;
  const float sign = inverse ? -1.0f : 1.0f;
  pool_.parallel_for(b * T, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, heads * head_dim)),
                     [&](std::int64_t r0, std::int64_t r1) {
                       for (std::int64_t row = r0; row < r1; ++row) {
                         const float* c = cos + (row % T) * table;
                         const float* s = sin + (row % T) * table;
                         for (std::int64_t h = 0; h < heads; ++h) {
                           float* v = x + (row * heads + h) * head_dim;
                           for (std::int64_t i = 0; i < half; ++i) {
                             const float sn = sign * s[i];
                             const float a = v[i], bb = v[i + half];
                             v[i] = a * c[i] - bb * sn;
                             v[i + half] = bb * c[i] + a * sn;
                           }
                         }
                       }
                     });
}

}  // namespace plexus
