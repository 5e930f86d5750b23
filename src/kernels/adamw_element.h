// One element of torch.optim.AdamW's update in f32, shared by the CPU (train/adamw.cpp) and the
// CUDA kernel (kernels/cuda/train_optimizer.cu): both compile it without fused multiply-adds
// (-ffp-contract=off, -fmad=false), so both give torch's CPU bits.
#pragma once
#include <math.h>

#include "kernels/host_device.h"

namespace plexus {

// The step's scalars, each the f32 torch's kernels use for the Python double it is given.
struct AdamwScalars {
  float coef, decay, one_minus_beta1, beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
};

struct AdamwElement {
  float p, m, v;
};

// The new weight and moments of one element from its weight p, gradient grad and moments m, v.
PLEXUS_HOST_DEVICE inline AdamwElement adamw_element(const AdamwScalars& s, float p, float grad, float m, float v) {
  const float w = s.one_minus_beta1;
  const float g = grad * s.coef;
  p = p * s.decay;
  // at::lerp: self + weight·(end − self) when |weight| < 0.5, else end − (end − self)·(1 − weight).
  m = w < 0.5f ? m + w * (g - m) : g - (g - m) * (1.0f - w);
  v = v * s.beta2;
  v = v + s.one_minus_beta2 * g * g;  // addcmul: self + value·t1·t2
  const float denom = sqrtf(v) / s.bc2_sqrt + s.eps;
  p = p + s.neg_step_size * m / denom;  // addcdiv: self + value·t1 / t2
  return {p, m, v};
}

}  // namespace plexus
