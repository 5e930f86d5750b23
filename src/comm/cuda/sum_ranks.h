// The reduce kernel of the CUDA in-process all-reduce: one chunk summed over the ranks' buffers
// in rank order, element by element, in f32 — ((x0 + x1) + x2) + … — the order the host's
// InProcessGroup adds in, so the same inputs give the same bits on the GPU and on the CPU.
// Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace plexus::cuda {

constexpr int kMaxSumRanks = 64;  // ranks one launch adds (the pointers travel as kernel arguments)

// out (n) = ins[0] (n) + ins[1] (n) + … + ins[ranks − 1] (n), added in that order with round-to-
// nearest f32 adds (never fused). Every pointer is device memory the stream's GPU can read (its
// own, or a peer's with peer access enabled); out may be one of ins. 1 <= ranks <= kMaxSumRanks;
// n == 0 launches nothing. Asynchronous on `stream`; the caller checks cudaGetLastError.
void launch_sum_ranks(const float* const* ins, int ranks, std::int64_t n, float* out, cudaStream_t stream);

}  // namespace plexus::cuda
