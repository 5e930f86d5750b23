// Mixture-of-experts routing (one block per token: softmax over the experts in shared memory, then
// k rounds of a block-wide argmax) and the combine of the experts' weighted outputs.
#include "kernels/cuda/moe.h"

#include <cfloat>

namespace plexus::cuda {

namespace {

constexpr int kThreads = 256;

// The block's best (value, index): larger value first, the lower index on a tie.
struct Best {
  float v;
  int i;
};
__device__ Best better(Best a, Best b) { return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a; }

__device__ Best block_best(Best mine, Best* scratch) {  // scratch (kThreads)
  scratch[threadIdx.x] = mine;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] = better(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  const Best b = scratch[0];
  __syncthreads();
  return b;
}

__device__ float block_sum(float mine, float* scratch) {  // scratch (kThreads)
  scratch[threadIdx.x] = mine;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float v = scratch[0];
  __syncthreads();
  return v;
}

__global__ void moe_route_kernel(const float* __restrict__ logits,  // (n, E)
                                 int E, int k, bool normalize,
                                 std::int32_t* __restrict__ expert,  // (n, k)
                                 float* __restrict__ weight) {       // (n, k)
  extern __shared__ float p[];  // (E)
  __shared__ Best best_scratch[kThreads];
  __shared__ float sum_scratch[kThreads];
  const std::int64_t t = blockIdx.x;
  const float* l = logits + t * E;
  Best m{-FLT_MAX, 0};
  for (int e = threadIdx.x; e < E; e += kThreads) {
    p[e] = l[e];
    m = better(m, Best{l[e], e});
  }
  const float mx = block_best(m, best_scratch).v;
  float s = 0;
  for (int e = threadIdx.x; e < E; e += kThreads) s += (p[e] = expf(p[e] - mx));
  const float total = block_sum(s, sum_scratch);
  for (int e = threadIdx.x; e < E; e += kThreads) p[e] /= total;
  __syncthreads();
  float chosen = 0;
  for (int j = 0; j < k; ++j) {
    Best b{-FLT_MAX, E};
    for (int e = threadIdx.x; e < E; e += kThreads) b = better(b, Best{p[e], e});
    const Best top = block_best(b, best_scratch);
    if (threadIdx.x == 0) {
      expert[t * k + j] = top.i;
      weight[t * k + j] = top.v;
      chosen += top.v;
      p[top.i] = -FLT_MAX;  // taken
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && normalize) {
    for (int j = 0; j < k; ++j) weight[t * k + j] /= chosen;
  }
}

__global__ void moe_combine_kernel(const float* __restrict__ y, const std::int32_t* __restrict__ pair_row,
                                   const float* __restrict__ weight, int k, std::int64_t H, float* __restrict__ out) {
  const std::int64_t t = blockIdx.x;
  for (std::int64_t d = threadIdx.x; d < H; d += blockDim.x) {
    float acc = 0;
    for (int j = 0; j < k; ++j) acc += weight[t * k + j] * y[static_cast<std::int64_t>(pair_row[t * k + j]) * H + d];
    out[t * H + d] = acc;
  }
}

}  // namespace

void launch_moe_route(const float* logits, std::int64_t n, std::int64_t E, std::int64_t k, bool normalize,
                      std::int32_t* expert, float* weight, cudaStream_t stream) {
  if (n <= 0) return;
  moe_route_kernel<<<static_cast<unsigned>(n), kThreads, static_cast<std::size_t>(E) * sizeof(float), stream>>>(
      logits, static_cast<int>(E), static_cast<int>(k), normalize, expert, weight);
}

void launch_moe_combine(const float* y, const std::int32_t* pair_row, const float* weight, std::int64_t n,
                        std::int64_t k, std::int64_t H, float* out, cudaStream_t stream) {
  if (n <= 0) return;
  moe_combine_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(y, pair_row, weight, static_cast<int>(k), H, out);
}

}  // namespace plexus::cuda
