// AdamW and the gradient's sums of squares (compiled with -fmad=false: the element arithmetic is
// the CPU's, fused multiply-adds would change its bits).
#include "kernels/cuda/train_optimizer.h"

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/device_math.cuh"

namespace plexus::cuda {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 2048;

__device__ __forceinline__ std::uint32_t not_finite_bit(float x) { return ((__float_as_uint(x) >> 23) & 0xffu) == 0xffu; }

template <AdamwPass kPass>
__global__ void __launch_bounds__(kThreads) adamw_kernel(AdamwScalars s, float* __restrict__ params,
                                                         const float* __restrict__ grads, float* __restrict__ m,
                                                         float* __restrict__ v, std::int64_t n,
                                                         AdamwBlockMaxima* __restrict__ maxima) {
  __shared__ float red[3][kThreads / 32];
  __shared__ std::uint32_t red_bad[kThreads / 32];
  float mp = 0, mm = 0, mv = 0;
  std::uint32_t bad = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (kPass == AdamwPass::kBounds) {
      const float p = params[i], mi = m[i], vi = v[i];
      mp = fmaxf(mp, fabsf(p));
      mm = fmaxf(mm, fabsf(mi));
      mv = fmaxf(mv, vi);
      bad |= not_finite_bit(p) | not_finite_bit(mi) | not_finite_bit(vi) | (__float_as_uint(vi) >> 31);
    } else {
      const AdamwElement e = adamw_element(s, params[i], grads[i], m[i], v[i]);
      if constexpr (kPass == AdamwPass::kUpdate) {
        params[i] = e.p;
        m[i] = e.m;
        v[i] = e.v;
        mp = fmaxf(mp, fabsf(e.p));
        mm = fmaxf(mm, fabsf(e.m));
        mv = fmaxf(mv, e.v);
      } else {
        bad |= not_finite_bit(e.p) | not_finite_bit(e.m) | not_finite_bit(e.v);
      }
    }
  }
  // Maxima and OR: exact whatever the order.
  for (int o = 16; o > 0; o >>= 1) {
    mp = fmaxf(mp, __shfl_xor_sync(0xffffffffu, mp, o));
    mm = fmaxf(mm, __shfl_xor_sync(0xffffffffu, mm, o));
    mv = fmaxf(mv, __shfl_xor_sync(0xffffffffu, mv, o));
    bad |= __shfl_xor_sync(0xffffffffu, bad, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    red[0][warp] = mp;
    red[1][warp] = mm;
    red[2][warp] = mv;
    red_bad[warp] = bad;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    AdamwBlockMaxima b{0, 0, 0, 0};
    for (int w = 0; w < kThreads / 32; ++w) {
      b.p = fmaxf(b.p, red[0][w]);
      b.m = fmaxf(b.m, red[1][w]);
      b.v = fmaxf(b.v, red[2][w]);
      b.bad |= red_bad[w];
    }
    maxima[blockIdx.x] = b;
  }
}

__global__ void __launch_bounds__(kThreads) sum_squares_kernel(const float* __restrict__ g,
                                                               const std::int64_t* __restrict__ begin,
                                                               const std::int64_t* __restrict__ end,
                                                               double* __restrict__ sums) {
  __shared__ double red[kThreads];
  double acc = 0;
  for (std::int64_t i = begin[blockIdx.x] + threadIdx.x; i < end[blockIdx.x]; i += blockDim.x) {
    const double x = g[i];
    acc += x * x;
  }
  red[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {  // a fixed tree
    if (static_cast<int>(threadIdx.x) < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = red[0];
}

}  // namespace

std::int64_t adamw_blocks(std::int64_t n) {
  return std::clamp<std::int64_t>((n + kThreads * 4 - 1) / (kThreads * 4), 1, kMaxBlocks);
}

void launch_adamw(AdamwPass pass, const AdamwScalars& s, float* params, const float* grads, float* exp_avg,
                  float* exp_avg_sq, std::int64_t n, AdamwBlockMaxima* maxima, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(adamw_blocks(n));
  switch (pass) {
    case AdamwPass::kUpdate:
      adamw_kernel<AdamwPass::kUpdate><<<blocks, kThreads, 0, stream>>>(s, params, grads, exp_avg, exp_avg_sq, n, maxima);
      break;
    case AdamwPass::kCheck:
      adamw_kernel<AdamwPass::kCheck><<<blocks, kThreads, 0, stream>>>(s, params, grads, exp_avg, exp_avg_sq, n, maxima);
      break;
    case AdamwPass::kBounds:
      adamw_kernel<AdamwPass::kBounds><<<blocks, kThreads, 0, stream>>>(s, params, grads, exp_avg, exp_avg_sq, n, maxima);
      break;
  }
}

void launch_sum_squares(const float* grads, const std::int64_t* begin, const std::int64_t* end, std::int64_t count,
                        double* sums, cudaStream_t stream) {
  if (count == 0) return;
  sum_squares_kernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(grads, begin, end, sums);
}

}  // namespace plexus::cuda
