// The AdamW update exactly as torch.optim.AdamW's single-tensor path computes it (decoupled
// weight decay, bias correction, constant learning rate), in f32 over an element range of the
// flat parameter buffer: the whole layout, or one rank's ZeRO-1 shard of it.
#pragma once
#include <cstdint>

#include "kernels/adamw_element.h"
#include "train/train_options.h"

namespace plexus {

class ThreadPool;

// A step whose update would make a weight or a moment non-finite (an overflow, with finite
// gradients) is skipped like one whose gradient is not finite (train/replica_trainer). Deciding
// it exactly takes a pass over the data (adamw_update_stays_finite); most steps need none, as
// the largest magnitudes of the weights and moments (which each update returns) and the
// gradient's norm bound every value the next update computes (adamw_update_surely_finite).
struct AdamwBounds {
  double p = 0;  // the largest |weight|
  double m = 0;  // the largest |first moment|
  double v = 0;  // the largest second moment (NaN when one is negative or not finite)
};

// The `step`-th update (counting from 1, after torch's `step += 1`) of n elements: for each i,
//   g = grads[i] · grad_coef                     (clip_grad_norm_'s in-place scaling, in f32)
//   p *= 1 − lr·wd
//   m = lerp(m, g, 1 − β1)                       (torch's lerp: m + w·(g − m) for w < 0.5)
//   v = β2·v + (1 − β2)·g·g
//   p += (−lr / (1 − β1^step)) · m / (sqrt(v) / sqrt(1 − β2^step) + eps)
// with the scalars formed in double and rounded to f32 where torch rounds them, the element
// arithmetic in f32. Elementwise, so any split of a buffer into ranges (threads, ZeRO shards)
// gives the same bits. `pool` may be null (the calling thread alone). Returns the bounds of the
// range it leaves.
AdamwBounds adamw_update(const OptimizerOptions& o, std::int64_t step, float grad_coef, float* params, const float* grads,
                         float* exp_avg, float* exp_avg_sq, std::int64_t n, ThreadPool* pool = nullptr);

// The f32 scalars of the step-th update (torch's roundings of its double arithmetic): what
// adamw_update and the CUDA kernel (train/cuda/cuda_optimizer) apply per element.
AdamwScalars adamw_scalars(const OptimizerOptions& o, std::int64_t step, float grad_coef);

// The bounds of a range as it stands (the starting weights, a restored state).
AdamwBounds adamw_bounds(const float* params, const float* exp_avg, const float* exp_avg_sq, std::int64_t n,
                         ThreadPool* pool = nullptr);
// True when the step-th update of a range that `b` bounds, with gradients whose 2-norm is
// `grad_norm` (before the clip scaling by grad_coef), cannot give an infinity or a NaN: every
// intermediate value bounded, in double, below a quarter of f32's largest. Sufficient, not
// necessary: false means "check", not "overflows".
bool adamw_update_surely_finite(const OptimizerOptions& o, std::int64_t step, float grad_coef, double grad_norm,
                                const AdamwBounds& b);
// Whether adamw_update with the same arguments would leave every weight and both moments finite
// (it writes nothing; the same arithmetic, so the same bits).
bool adamw_update_stays_finite(const OptimizerOptions& o, std::int64_t step, float grad_coef, const float* params,
                               const float* grads, const float* exp_avg, const float* exp_avg_sq, std::int64_t n,
                               ThreadPool* pool = nullptr);

}  // namespace plexus
