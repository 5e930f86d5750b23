// GPT-2's row and element kernels on CUDA: LayerNorm with bias and the tanh GELU (gelu_new).
// Host launch functions; every pointer is device memory, every launch asynchronous on `stream`
// (the caller checks cudaGetLastError). n == 0 is a no-op. Oracles: kernels/ref/layernorm_gelu_ref.h.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace plexus::cuda {

// y (rows, d) = (x − mean) / sqrt(var + eps) · w (d) + b (d), var the biased variance; one block
// per row, f32 sums (mean first, then the centred squares); y may alias x.
void launch_layernorm(const float* x, const float* w, const float* b, std::int64_t rows, std::int64_t d, float eps,
                      float* y, cudaStream_t stream);

// x (n) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), in place.
void launch_gelu_tanh(float* x, std::int64_t n, cudaStream_t stream);

}  // namespace plexus::cuda
