// AdamW's elementwise update (compiled with -ffp-contract=off: torch's kernels neither fuse a
// multiply into an add, so neither may we).
#include "train/adamw.h"

#include <atomic>
#include <cmath>

#include "core/thread_pool.h"

namespace plexus {
namespace {

struct Scalars {
  float coef, decay, one_minus_beta1, beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
};

// One element's new weight and moments: the arithmetic both passes share, so the check and the
// update compute the same bits.
struct Element {
  float p, m, v;
};
inline Element step_element(const Scalars& s, float p, float grad, float m, float v) {
  const float w = s.one_minus_beta1;
  const float g = grad * s.coef;
  p = p * s.decay;
  // at::lerp: self + weight·(end − self) when |weight| < 0.5, else end − (end − self)·(1 − weight).
  m = w < 0.5f ? m + w * (g - m) : g - (g - m) * (1.0f - w);
  v = v * s.beta2;
  v = v + s.one_minus_beta2 * g * g;  // addcmul: self + value·t1·t2
  const float denom = std::sqrt(v) / s.bc2_sqrt + s.eps;
  p = p + s.neg_step_size * m / denom;  // addcdiv: self + value·t1 / t2
  return {p, m, v};
}

// One range; every scalar is the f32 torch's CPU kernels use for the Python double it is given.
void update_range(const Scalars& s, float* p, const float* grads, float* m, float* v, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const Element e = step_element(s, p[i], grads[i], m[i], v[i]);
    p[i] = e.p;
    m[i] = e.m;
    v[i] = e.v;
  }
}

// Whether the update of a range would leave every weight and moment finite (nothing written).
bool range_stays_finite(const Scalars& s, const float* p, const float* grads, const float* m, const float* v, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const Element e = step_element(s, p[i], grads[i], m[i], v[i]);
    if (!(std::isfinite(e.p) && std::isfinite(e.m) && std::isfinite(e.v))) return false;
  }
  return true;
}

Scalars scalars_of(const OptimizerOptions& o, std::int64_t step, float grad_coef) {
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  return Scalars{grad_coef,
                 static_cast<float>(1.0 - o.lr * o.weight_decay),
                 static_cast<float>(1.0 - o.beta1),
                 static_cast<float>(o.beta1),
                 static_cast<float>(o.beta2),
                 static_cast<float>(1.0 - o.beta2),
                 static_cast<float>(std::sqrt(bc2)),
                 static_cast<float>(o.eps),
                 static_cast<float>(-(o.lr / bc1))};
}

}  // namespace

void adamw_update(const OptimizerOptions& o, std::int64_t step, float grad_coef, float* params, const float* grads,
                  float* exp_avg, float* exp_avg_sq, std::int64_t n, ThreadPool* pool) {
  const Scalars s = scalars_of(o, step, grad_coef);
  if (pool == nullptr) {
    update_range(s, params, grads, exp_avg, exp_avg_sq, n);
    return;
  }
  pool->parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) {
    update_range(s, params + b, grads + b, exp_avg + b, exp_avg_sq + b, e - b);
  });
}

bool adamw_update_stays_finite(const OptimizerOptions& o, std::int64_t step, float grad_coef, const float* params,
                               const float* grads, const float* exp_avg, const float* exp_avg_sq, std::int64_t n,
                               ThreadPool* pool) {
  const Scalars s = scalars_of(o, step, grad_coef);
  if (pool == nullptr) return range_stays_finite(s, params, grads, exp_avg, exp_avg_sq, n);
  std::atomic<bool> finite{true};
  pool->parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) {
    if (!range_stays_finite(s, params + b, grads + b, exp_avg + b, exp_avg_sq + b, e - b)) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}

}  // namespace plexus
