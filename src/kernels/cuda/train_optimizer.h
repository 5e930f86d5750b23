// The optimizer's CUDA kernels over the flat parameter buffer: AdamW's update (the CPU's element
// arithmetic, kernels/adamw_element.h, compiled without fused multiply-adds: the same bits) with
// the maxima the next step's overflow check needs, and the gradient norm's per-block sums of
// squares. Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/adamw_element.h"

namespace plexus::cuda {

// What one CUDA block of launch_adamw found over its elements: the largest |p|, |m| and v, and
// `bad` 1 when a value was not finite (or v negative).
struct AdamwBlockMaxima {
  float p, m, v;
  std::uint32_t bad;
};

enum class AdamwPass {
  kUpdate,  // write the update; maxima of what it wrote
  kCheck,   // write nothing; bad when the update would make a value non-finite
  kBounds,  // write nothing; maxima (and bad) of the values as they stand
};

// Blocks launch_adamw uses for n elements (the length of `maxima`).
std::int64_t adamw_blocks(std::int64_t n);
// One pass over n elements of params, grads, exp_avg, exp_avg_sq (grads unused by kBounds);
// maxima (adamw_blocks(n)) device.
void launch_adamw(AdamwPass pass, const AdamwScalars& s, float* params, const float* grads, float* exp_avg,
                  float* exp_avg_sq, std::int64_t n, AdamwBlockMaxima* maxima, cudaStream_t stream);

// sums[k] (double) = Σ g² over grads[begin[k] .. end[k]), one CUDA block per range, in a fixed
// order. begin, end (count) device.
void launch_sum_squares(const float* grads, const std::int64_t* begin, const std::int64_t* end, std::int64_t count,
                        double* sums, cudaStream_t stream);

}  // namespace plexus::cuda
