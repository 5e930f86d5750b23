// The in-process all-reduce's sum: a grid-stride loop, float4 when every buffer is 16-byte aligned.
#include "comm/cuda/sum_ranks.h"

#include <algorithm>
#include <cassert>

namespace plexus::cuda {

namespace {

constexpr int kThreads = 256;

struct RankPointers {
  const float* p[kMaxSumRanks];
};

__device__ float4 add4(float4 a, float4 b) {
  return make_float4(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y), __fadd_rn(a.z, b.z), __fadd_rn(a.w, b.w));
}

__global__ void sum_ranks_kernel(RankPointers in, int ranks, std::int64_t n, float* out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float s = in.p[0][i];
    for (int k = 1; k < ranks; ++k) s = __fadd_rn(s, in.p[k][i]);
    out[i] = s;
  }
}

__global__ void sum_ranks4_kernel(RankPointers in, int ranks, std::int64_t n4, float* out) {  // n4 float4s
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 s = reinterpret_cast<const float4*>(in.p[0])[i];
    for (int k = 1; k < ranks; ++k) s = add4(s, reinterpret_cast<const float4*>(in.p[k])[i]);
    reinterpret_cast<float4*>(out)[i] = s;
  }
}

unsigned grid_for(std::int64_t work) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((work + kThreads - 1) / kThreads, 1, 4096));
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

void launch_sum_ranks(const float* const* ins, int ranks, std::int64_t n, float* out, cudaStream_t stream) {
  assert(ranks >= 1 && ranks <= kMaxSumRanks);
  if (n <= 0) return;
  RankPointers in{};
  bool vec = aligned16(out);
  for (int k = 0; k < ranks; ++k) {
    in.p[k] = ins[k];
    vec = vec && aligned16(ins[k]);
  }
  const std::int64_t n4 = vec ? n / 4 : 0;
  if (n4 > 0) sum_ranks4_kernel<<<grid_for(n4), kThreads, 0, stream>>>(in, ranks, n4, out);
  if (const std::int64_t done = n4 * 4; done < n) {  // the tail (or everything, unaligned)
    RankPointers tail{};
    for (int k = 0; k < ranks; ++k) tail.p[k] = ins[k] + done;
    sum_ranks_kernel<<<grid_for(n - done), kThreads, 0, stream>>>(tail, ranks, n - done, out + done);
  }
}

}  // namespace plexus::cuda
