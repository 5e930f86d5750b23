// Cross-entropy rows: the max, then Σ exp(l − max) (block reductions in a fixed tree), then the
// gradient written over the logits; the target's logit is read before any thread writes.
#include "kernels/cuda/train_loss.h"

#include <cstdint>

#include "kernels/cuda/device_math.cuh"

namespace plexus::cuda {

namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ float block_max(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  const float t = lane < warps ? red[lane] : -INFINITY;
  return warp_max(t);
}

__global__ void __launch_bounds__(kThreads) cross_entropy_kernel(float* __restrict__ logits,
                                                                 const std::int32_t* __restrict__ targets,
                                                                 std::int64_t vocab, float grad_scale,
                                                                 double* __restrict__ row_loss) {
  __shared__ float red[32];
  const std::int64_t r = blockIdx.x;
  float* l = logits + r * vocab;
  const std::int32_t target = targets[r];
  const float target_logit = l[target];  // read before the barriers below, so before any write
  float mx = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) mx = fmaxf(mx, l[j]);
  mx = block_max(mx, red);
  float sum = 0;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) sum += expf(l[j] - mx);
  sum = block_sum(sum, red);
  const float lse = mx + logf(sum);
  if (threadIdx.x == 0) row_loss[r] = static_cast<double>(mx) + log(static_cast<double>(sum)) - target_logit;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    l[j] = (expf(l[j] - lse) - (j == target ? 1.0f : 0.0f)) * grad_scale;
}

}  // namespace

void launch_cross_entropy(float* logits, const std::int32_t* targets, std::int64_t n, std::int64_t vocab,
                          float grad_scale, double* row_loss, cudaStream_t stream) {
  if (n == 0) return;
  cross_entropy_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(logits, targets, vocab, grad_scale, row_loss);
}

}  // namespace plexus::cuda
