// AdamW's elementwise update (compiled with -ffp-contract=off: torch's kernels neither fuse a
// multiply into an add, so neither may we).
#include "train/adamw.h"

#include <cmath>

#include "core/thread_pool.h"

namespace plexus {
namespace {

struct Scalars {
  float coef, decay, one_minus_beta1, beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
};

// One range; every scalar is the f32 torch's CPU kernels use for the Python double it is given.
void update_range(const Scalars& s, float* p, const float* grads, float* m, float* v, std::int64_t n) {
  const float w = s.one_minus_beta1;
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grads[i] * s.coef;
    p[i] = p[i] * s.decay;
    // at::lerp: self + weight·(end − self) when |weight| < 0.5, else end − (end − self)·(1 − weight).
    m[i] = w < 0.5f ? m[i] + w * (g - m[i]) : g - (g - m[i]) * (1.0f - w);
    v[i] = v[i] * s.beta2;
    v[i] = v[i] + s.one_minus_beta2 * g * g;  // addcmul: self + value·t1·t2
    const float denom = std::sqrt(v[i]) / s.bc2_sqrt + s.eps;
    p[i] = p[i] + s.neg_step_size * m[i] / denom;  // addcdiv: self + value·t1 / t2
  }
}

}  // namespace

void adamw_update(const OptimizerOptions& o, std::int64_t step, float grad_coef, float* params, const float* grads,
                  float* exp_avg, float* exp_avg_sq, std::int64_t n, ThreadPool* pool) {
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  const Scalars s{grad_coef,
                  static_cast<float>(1.0 - o.lr * o.weight_decay),
                  static_cast<float>(1.0 - o.beta1),
                  static_cast<float>(o.beta1),
                  static_cast<float>(o.beta2),
                  static_cast<float>(1.0 - o.beta2),
                  static_cast<float>(std::sqrt(bc2)),
                  static_cast<float>(o.eps),
                  static_cast<float>(-(o.lr / bc1))};
  if (pool == nullptr) {
    update_range(s, params, grads, exp_avg, exp_avg_sq, n);
    return;
  }
  pool->parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) {
    update_range(s, params + b, grads + b, exp_avg + b, exp_avg_sq + b, e - b);
  });
}

}  // namespace plexus
