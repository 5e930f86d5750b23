// Plain oracles (double arithmetic) of GPT-2's LayerNorm and tanh GELU, for the CPU and CUDA
// implementations of ComputeOps::layernorm and ComputeOps::gelu_tanh.
#pragma once
#include <cstdint>

namespace plexus::ref {

// y (n, d) = (x − mean) / sqrt(var + eps) · w + b per row, var the biased variance.
void layernorm(const float* x, const float* w, const float* b, std::int64_t n, std::int64_t d, double eps, float* y);

// out (n) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
void gelu_tanh(const float* x, std::int64_t n, float* out);

}  // namespace plexus::ref
