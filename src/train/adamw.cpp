// AdamW's elementwise update (compiled with -ffp-contract=off: torch's kernels neither fuse a
// multiply into an add, so neither may we).
#include "train/adamw.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>

#include "core/thread_pool.h"
#include "kernels/adamw_element.h"

namespace plexus {
namespace {

// 1 when `x` is an infinity or a NaN (all exponent bits set), else 0: integer bits, cheap to OR
// over a range.
inline std::uint32_t not_finite_bit(float x) { return ((std::bit_cast<std::uint32_t>(x) >> 23) & 0xffu) == 0xffu; }

// The largest magnitudes of a range's weights and moments, folded as ranges finish. A value that
// is not finite, or a negative second moment (sqrt would make it NaN), marks the range `bad`:
// then no bound holds (NaN bounds).
struct Maxima {
  float p = 0, m = 0, v = 0;
  std::uint32_t bad = 0;
  // An update's outputs: finite and v >= 0 whenever it is applied (checked before), so only the
  // maxima are kept.
  void add_finite(float wp, float wm, float wv) {
    p = std::max(p, std::fabs(wp));
    m = std::max(m, std::fabs(wm));
    v = std::max(v, wv);
  }
  // Values of any provenance (starting weights, a restored state).
  void add(float wp, float wm, float wv) {
    add_finite(wp, wm, wv);
    bad |= not_finite_bit(wp) | not_finite_bit(wm) | not_finite_bit(wv) | (std::bit_cast<std::uint32_t>(wv) >> 31);
  }
  void fold(const Maxima& o) {
    p = std::max(p, o.p);
    m = std::max(m, o.m);
    v = std::max(v, o.v);
    bad |= o.bad;
  }
  AdamwBounds bounds() const {
    if (bad != 0) return {std::nan(""), std::nan(""), std::nan("")};
    return {p, m, v};
  }
};

// One range; every scalar is the f32 torch's CPU kernels use for the Python double it is given.
// Returns the maxima of what it wrote.
Maxima update_range(const AdamwScalars& s, float* p, const float* grads, float* m, float* v, std::int64_t n) {
  Maxima mx;
  for (std::int64_t i = 0; i < n; ++i) {
    const AdamwElement e = adamw_element(s, p[i], grads[i], m[i], v[i]);
    p[i] = e.p;
    m[i] = e.m;
    v[i] = e.v;
    mx.add_finite(e.p, e.m, e.v);
  }
  return mx;
}

Maxima range_maxima(const float* p, const float* m, const float* v, std::int64_t n) {
  Maxima mx;
  for (std::int64_t i = 0; i < n; ++i) mx.add(p[i], m[i], v[i]);
  return mx;
}

// Whether the update of a range would leave every weight and moment finite (nothing written).
bool range_stays_finite(const AdamwScalars& s, const float* p, const float* grads, const float* m, const float* v, std::int64_t n) {
  std::uint32_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const AdamwElement e = adamw_element(s, p[i], grads[i], m[i], v[i]);
    bad |= not_finite_bit(e.p) | not_finite_bit(e.m) | not_finite_bit(e.v);
  }
  return bad == 0;
}

}  // namespace

AdamwScalars adamw_scalars(const OptimizerOptions& o, std::int64_t step, float grad_coef) {
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  return AdamwScalars{grad_coef,
                      static_cast<float>(1.0 - o.lr * o.weight_decay),
                      static_cast<float>(1.0 - o.beta1),
                      static_cast<float>(o.beta1),
                      static_cast<float>(o.beta2),
                      static_cast<float>(1.0 - o.beta2),
                      static_cast<float>(std::sqrt(bc2)),
                      static_cast<float>(o.eps),
                      static_cast<float>(-(o.lr / bc1))};
}

AdamwBounds adamw_update(const OptimizerOptions& o, std::int64_t step, float grad_coef, float* params, const float* grads,
                         float* exp_avg, float* exp_avg_sq, std::int64_t n, ThreadPool* pool) {
  const AdamwScalars s = adamw_scalars(o, step, grad_coef);
  if (pool == nullptr) return update_range(s, params, grads, exp_avg, exp_avg_sq, n).bounds();
  Maxima all;
  std::mutex mutex;
  pool->parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) {
    const Maxima mx = update_range(s, params + b, grads + b, exp_avg + b, exp_avg_sq + b, e - b);
    std::lock_guard lock(mutex);
    all.fold(mx);
  });
  return all.bounds();
}

AdamwBounds adamw_bounds(const float* params, const float* exp_avg, const float* exp_avg_sq, std::int64_t n, ThreadPool* pool) {
  if (pool == nullptr) return range_maxima(params, exp_avg, exp_avg_sq, n).bounds();
  Maxima all;
  std::mutex mutex;
  pool->parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) {
    const Maxima mx = range_maxima(params + b, exp_avg + b, exp_avg_sq + b, e - b);
    std::lock_guard lock(mutex);
    all.fold(mx);
  });
  return all.bounds();
}

bool adamw_update_surely_finite(const OptimizerOptions& o, std::int64_t step, float grad_coef, double grad_norm,
                                const AdamwBounds& b) {
  const AdamwScalars s = adamw_scalars(o, step, grad_coef);
  // An element's update is a few f32 operations, each rounding its exact result by at most a
  // factor 1 + 2^-23: a value whose exact bound is below a quarter of f32's largest stays finite.
  const double below = std::numeric_limits<float>::max() / 4.0;
  const auto d = [](float x) { return std::fabs(static_cast<double>(x)); };
  if (!(std::isfinite(grad_norm) && s.eps > 0 && d(s.eps) < below && s.bc2_sqrt > 0 && std::isfinite(s.neg_step_size) &&
        std::isfinite(s.decay))) {
    return false;
  }
  const double g = d(s.coef) * grad_norm * 1.001;  // every |grad · coef|: the 2-norm bounds each
  const double m = 2 * (b.m + g);                  // |g − m|, the lerp's steps, the new |m|
  const double v = b.v + d(s.one_minus_beta2) * g * g;  // the new v
  const double step_m = d(s.neg_step_size) * m;
  const double p = b.p * d(s.decay) + step_m / d(s.eps);  // the denominator is at least eps
  // A NaN bound fails every comparison: false, "check".
  return g * g < below && m < below && v < below && std::sqrt(v) / d(s.bc2_sqrt) < below && step_m < below && p < below;
}

bool adamw_update_stays_finite(const OptimizerOptions& o, std::int64_t step, float grad_coef, const float* params,
                               const float* grads, const float* exp_avg, const float* exp_avg_sq, std::int64_t n,
                               ThreadPool* pool) {
  const AdamwScalars s = adamw_scalars(o, step, grad_coef);
  if (pool == nullptr) return range_stays_finite(s, params, grads, exp_avg, exp_avg_sq, n);
  std::atomic<bool> finite{true};
  pool->parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) {
    if (!range_stays_finite(s, params + b, grads + b, exp_avg + b, exp_avg_sq + b, e - b)) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}

}  // namespace plexus
