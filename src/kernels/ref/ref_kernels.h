// Plain, obviously-correct oracle kernels (double accumulation). Every fast kernel in
// kernels/cpu is tested against these.
#pragma once
#include <cstdint>

#include "kernels/weight_matrix.h"

namespace plexus::ref {

// Weight element r, c as float.
float weight_at(const WeightMatrix& w, std::int64_t r, std::int64_t c);

// y (n, w.rows) = x (n, w.cols) · wᵀ
void matmul(const WeightMatrix& w, const float* x, std::int64_t n, float* y);

// y (n, d) = x / sqrt(mean(x²) + eps) * weight, per row; weight (d) in `wt`.
void rmsnorm(const float* x, const void* weight, DType wt, std::int64_t n, std::int64_t d, double eps, float* y);

// out (n) = silu(gate) * up, silu(g) = g / (1 + e^-g)
void silu_mul(const float* gate, const float* up, std::int64_t n, float* out);

// In place, rotate-half RoPE on x (n_heads, head_dim) at `position` with inv_freq (head_dim/2).
void rope(float* x, std::int64_t n_heads, std::int64_t head_dim, std::int64_t position, const double* inv_freq);

// Causal attention of one query q (head_dim) against keys/values (n_keys, head_dim) with
// row stride `stride`: out (head_dim) = softmax(q·k / sqrt(head_dim)) · v.
void attention(const float* q, const float* keys, const float* values, std::int64_t n_keys, std::int64_t stride,
               std::int64_t head_dim, float* out);

// log(sum(exp(x))) over n values, in double.
double logsumexp(const float* x, std::int64_t n);

}  // namespace plexus::ref
