// GPT-2's LayerNorm and tanh GELU.
#include <algorithm>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/layernorm_gelu.h"

namespace plexus::cuda {

namespace {

__global__ void layernorm_kernel(const float* x,              // (rows, d); may alias y
                                 const float* __restrict__ w,  // (d)
                                 const float* __restrict__ b,  // (d)
                                 std::int64_t d, float eps,
                                 float* y) {                   // (rows, d)
  __shared__ float red[32];
  const float* xr = x + static_cast<std::int64_t>(blockIdx.x) * d;
  float* yr = y + static_cast<std::int64_t>(blockIdx.x) * d;
  float s = 0.0f;
  for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) s += xr[i];
  const float mean = block_sum(s, red) / static_cast<float>(d);
  float sq = 0.0f;
  for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const float c = xr[i] - mean;
    sq += c * c;
  }
  const float inv = rsqrtf(block_sum(sq, red) / static_cast<float>(d) + eps);
  // Each thread rewrites only the elements it read: y may alias x.
  for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
}

__global__ void gelu_tanh_kernel(float* __restrict__ x, std::int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
  }
}

}  // namespace

void launch_layernorm(const float* x, const float* w, const float* b, std::int64_t rows, std::int64_t d, float eps,
                      float* y, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return;
  const int threads = d <= 256 ? 64 : d <= 2048 ? 256 : 512;
  layernorm_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, w, b, d, eps, y);
}

void launch_gelu_tanh(float* x, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kBlock = 256;
  const std::int64_t blocks = std::min<std::int64_t>((n + kBlock - 1) / kBlock, 65535);
  gelu_tanh_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(x, n);
}

}  // namespace plexus::cuda
