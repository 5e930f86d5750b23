// Training's causal self-attention on CUDA, flash-style: the forward keeps the log-sum-exp of
// each query row, the backward recomputes the probabilities from it, and no (T, T) matrix is
// ever in memory. Deterministic: every sum in a fixed order, no atomics (dq by query rows, dk
// and dv by key rows, each GQA group's heads added in order). Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace plexus::cuda {

// b sequences of T tokens; query head h reads kv head h / (n_heads / n_kv_heads); keys
// [max(0, t − window + 1), t] (window 0: [0, t]). head_dim <= kTrainAttentionMaxHeadDim.
struct TrainAttentionDims {
  std::int64_t b = 0, T = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, window = 0;
  float scale = 1;
};
inline constexpr std::int64_t kTrainAttentionMaxHeadDim = 256;

// out (b·T, n_heads·head_dim) = softmax(q·kᵀ·scale)·v; lse (b, n_heads, T). q (b·T,
// n_heads·head_dim), k, v (b·T, n_kv_heads·head_dim).
void launch_train_attention(const float* q, const float* k, const float* v, const TrainAttentionDims& d, float* out,
                            float* lse, cudaStream_t stream);

// dq (b·T, n_heads·head_dim), dk, dv (b·T, n_kv_heads·head_dim) written, from dout and the
// forward's q, k, v, out, lse. `row_dot` is scratch of b·n_heads·T floats (Σ dout·out per row).
void launch_train_attention_backward(const float* dout, const float* q, const float* k, const float* v,
                                     const float* out, const float* lse, const TrainAttentionDims& d, float* dq,
                                     float* dk, float* dv, float* row_dot, cudaStream_t stream);

}  // namespace plexus::cuda
