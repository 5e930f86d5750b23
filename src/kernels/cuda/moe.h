// Mixture-of-experts kernels: top-k routing of router logits, and the weighted sum of each
// token's expert outputs. Host launch functions, asynchronous on `stream`; device pointers.
// Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace plexus::cuda {

// The most experts launch_moe_route takes (its probabilities live in shared memory).
constexpr std::int64_t kMoeMaxExperts = 8192;

// For each token t < n: p = softmax(logits row t (E)); expert (n, k) = its k largest, largest first
// (ties: the lower expert), weight (n, k) their probabilities, rescaled to sum 1 when `normalize`.
// One block per token; 1 <= k <= E <= kMoeMaxExperts.
void launch_moe_route(const float* logits, std::int64_t n, std::int64_t E, std::int64_t k, bool normalize,
                      std::int32_t* expert, float* weight, cudaStream_t stream);

// out (n, H) = Σ_j weight[t, j] · y row pair_row[t, j] (H), j = 0..k-1 in order; y holds the expert
// outputs (rows ≥ max pair_row + 1, H), pair_row (n, k) int32, weight (n, k).
void launch_moe_combine(const float* y, const std::int32_t* pair_row, const float* weight, std::int64_t n,
                        std::int64_t k, std::int64_t H, float* out, cudaStream_t stream);

}  // namespace plexus::cuda
