// The GPU sampler: one block per logits row; prefixes of the order (logit desc, id asc) found by
// bisection stand in for the sort of kernels/ref/sampling_ref.cpp.
#include "kernels/cuda/sampling.h"

#include <cuda_runtime.h>

#include <climits>

#include "kernels/philox.h"
#include "kernels/sampling_prefix.h"

namespace plexus::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// Rank of token i: larger comes first in the order (logit desc, id asc).
__device__ __forceinline__ std::uint64_t rank_key(std::uint32_t key, std::int64_t i) {
  return (static_cast<std::uint64_t>(key) << 32) | (0xffffffffu - static_cast<std::uint32_t>(i));
}

// Block-wide reductions; every thread gets the result. `red` is shared memory of kWarps values
// of T; each call contains __syncthreads: call from every thread.
template <typename T, typename Op>
__device__ T block_reduce(T v, T* red, Op op) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // `red` may still be read by an earlier call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  T t = red[0];
  for (int w = 1; w < kWarps; ++w) t = op(t, red[w]);
  return t;
}

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};
struct Min {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a < b ? a : b; }
};

struct Shared {
  double d[kWarps];
  unsigned long long u[kWarps];
  long long i[kWarps];
  double scan[kThreads];
};

// The row and what the filters need of it.
struct Row {
  const float* logits;
  std::int64_t vocab;
  float max;
  double temperature;
  __device__ double weight(float v) const { return exp((static_cast<double>(v) - max) / temperature); }
};

// The tokens of `in` with key in [lo, hi]: their count (kWeight false) or weight.
template <bool kWeight>
__device__ double measure_keys(const Row& row, const SamplePrefix& in, std::uint32_t lo, std::uint32_t hi, Shared& sh) {
  double acc = 0;
  for (std::int64_t i = threadIdx.x; i < row.vocab; i += kThreads) {
    const float v = row.logits[i];
    const std::uint32_t key = ordered_key(v);
    if (key >= lo && key <= hi && in.has(key, i)) acc += kWeight ? row.weight(v) : 1.0;
  }
  return block_reduce(acc, sh.d, Sum{});
}

// The shortest prefix of `in` whose count or weight reaches `target` (kernels/sampling_prefix.h),
// each measure one pass over the row (the tied ids': over ids 0..c) reduced by the block.
template <bool kWeight>
__device__ SamplePrefix block_shortest_prefix(const Row& row, const SamplePrefix& in, double target, Shared& sh) {
  const auto keys = [&](std::uint32_t lo, std::uint32_t hi) { return measure_keys<kWeight>(row, in, lo, hi, sh); };
  const auto ids = [&](std::uint32_t k, std::int64_t c) {
    double acc = 0;
    for (std::int64_t i = threadIdx.x; i <= c; i += kThreads) {
      const float v = row.logits[i];
      const std::uint32_t key = ordered_key(v);
      if (key == k && in.has(key, i)) acc += kWeight ? row.weight(v) : 1.0;
    }
    return block_reduce(acc, sh.d, Sum{});
  };
  return shortest_prefix(row.vocab, target, keys, ids);
}

__global__ void sample_kernel(const float* __restrict__ logits,  // (n, vocab)
                              std::int64_t vocab, const SamplingParams* __restrict__ params,
                              const std::uint64_t* __restrict__ seeds, const std::uint64_t* __restrict__ steps,
                              std::int32_t* __restrict__ ids, float* __restrict__ logprobs,  // (n)
                              int top_n, std::int32_t* __restrict__ top_ids,
                              float* __restrict__ top_logprobs) {  // (n, top_n)
  __shared__ Shared sh;
  const std::int64_t r = blockIdx.x;
  const float* x = logits + r * vocab;
  const SamplingParams p = params[r];

  // The first token of the order (greedy's pick) and log Z of the raw logits.
  unsigned long long best = 0;
  for (std::int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const unsigned long long k = rank_key(ordered_key(x[i]), i);
    best = k > best ? k : best;
  }
  best = block_reduce(best, sh.u, Max{});
  const std::int64_t first = 0xffffffffu - static_cast<std::uint32_t>(best);
  const float mx = x[first];
  double z = 0;
  for (std::int64_t i = threadIdx.x; i < vocab; i += kThreads) z += exp(static_cast<double>(x[i]) - mx);
  const double log_z = mx + log(block_reduce(z, sh.d, Sum{}));

  std::int64_t chosen = first;
  if (p.temperature >= kSampleGreedyBelow) {
    const Row row{x, vocab, mx, static_cast<double>(p.temperature)};
    SamplePrefix kept;
    if (p.top_k > 0 && p.top_k < vocab) kept = block_shortest_prefix<false>(row, kept, static_cast<double>(p.top_k), sh);
    if (p.top_p < 1) {
      const double total = measure_keys<true>(row, kept, 0, 0xffffffffu, sh);
      kept = block_shortest_prefix<true>(row, kept, static_cast<double>(p.top_p) * total, sh);
    }
    // Min-p keeps weight >= min_p (the first token's weight is 1); then the inverse CDF over
    // the kept tokens in ascending id order, each thread over one contiguous chunk.
    const std::int64_t chunk = (vocab + kThreads - 1) / kThreads;
    const std::int64_t begin = threadIdx.x * chunk, end = begin + chunk < vocab ? begin + chunk : vocab;
    const auto keeps = [&](std::int64_t i, double* w) {
      const float v = x[i];
      if (!kept.has(ordered_key(v), i)) return false;
      *w = row.weight(v);
      return *w >= static_cast<double>(p.min_p);
    };
    double part = 0;
    long long last = -1;
    for (std::int64_t i = begin; i < end; ++i) {
      double w;
      if (keeps(i, &w)) {
        part += w;
        last = i;
      }
    }
    // Exclusive scan of the chunk sums in thread order (a serial pass by thread 0: 256 adds).
    sh.scan[threadIdx.x] = part;
    __syncthreads();
    if (threadIdx.x == 0) {
      double run = 0;
      for (int t = 0; t < kThreads; ++t) {
        const double s = sh.scan[t];
        sh.scan[t] = run;
        run += s;
      }
      sh.d[0] = run;
    }
    __syncthreads();
    const double before = sh.scan[threadIdx.x], total = sh.d[0];
    const double target = philox_uniform(seeds[r], steps[r]) * total;
    // The chunk's own running sum repeats `part` bit for bit: a thread that claims the target
    // finds its token.
    long long pick = LLONG_MAX;
    if (before <= target && target - before < part) {
      double acc = 0;
      for (std::int64_t i = begin; i < end && pick == LLONG_MAX; ++i) {
        double w;
        if (keeps(i, &w) && target - before < (acc += w)) pick = i;
      }
    }
    pick = block_reduce(pick, sh.i, Min{});
    last = block_reduce(last, sh.i, Max{});
    chosen = pick != LLONG_MAX ? pick : last;  // rounding left the running sum short: the last kept
  }
  if (threadIdx.x == 0) {
    ids[r] = static_cast<std::int32_t>(chosen);
    logprobs[r] = static_cast<float>(static_cast<double>(x[chosen]) - log_z);
  }

  // Top-N: N passes, each the best token after the previous one in the order.
  unsigned long long prev = best;
  for (int t = 0; t < top_n; ++t) {
    if (t > 0) {
      unsigned long long next = 0;
      for (std::int64_t i = threadIdx.x; i < vocab; i += kThreads) {
        const unsigned long long k = rank_key(ordered_key(x[i]), i);
        if (k < prev && k > next) next = k;
      }
      prev = block_reduce(next, sh.u, Max{});
    }
    if (threadIdx.x == 0) {
      const std::int64_t id = 0xffffffffu - static_cast<std::uint32_t>(prev);
      top_ids[r * top_n + t] = static_cast<std::int32_t>(id);
      top_logprobs[r * top_n + t] = static_cast<float>(static_cast<double>(x[id]) - log_z);
    }
  }
}

}  // namespace

void launch_sample(const float* logits, std::int64_t n, std::int64_t vocab, const SamplingParams* params,
                   const std::uint64_t* seeds, const std::uint64_t* steps, std::int32_t* ids, float* logprobs,
                   int top_n, std::int32_t* top_ids, float* top_logprobs, cudaStream_t stream) {
  if (n <= 0) return;
  sample_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(logits, vocab, params, seeds, steps, ids, logprobs,
                                                                   top_n, top_ids, top_logprobs);
}

}  // namespace plexus::cuda
