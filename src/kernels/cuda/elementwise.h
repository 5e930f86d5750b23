// Row-wise and element-wise CUDA kernels of the forward pass: embedding gather, rmsnorm, bias,
// residual add, silu·mul, row gather. Host launch functions; every pointer is device memory,
// every launch is asynchronous on `stream` (the caller checks cudaGetLastError). n == 0 is a
// no-op. Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace plexus::cuda {

// x (n, d) f32 = rows ids[i] of table (vocab, d) in `dtype`; ids (n) int32 on the device. A row
// whose id is outside [0, vocab) is written as NaN (callers check ids on the host first). Block
// formats (every one of kBlockFormats) are dequantised: d a multiple of the block's weights,
// table 2-byte aligned.
void launch_embed(const void* table, DType dtype, std::int64_t vocab, std::int64_t d, const std::int32_t* ids,
                  std::int64_t n, float* x, cudaStream_t stream);

// y (rows, d) = x (rows, d) / sqrt(mean(x²) + eps) * w (d), f32 accumulation, one block per
// row; y may alias x.
void launch_rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
                    cudaStream_t stream);

// y (n, d) += bias (d), every row.
void launch_add_bias(float* y, const float* bias, std::int64_t n, std::int64_t d, cudaStream_t stream);

// x (n) += y (n)
void launch_add(float* x, const float* y, std::int64_t n, cudaStream_t stream);

// x (rows, d) += y (rows, d), then out (rows, d) = rmsnorm(x) · w: launch_add then launch_rmsnorm
// in one kernel (one block per row, the same threads and sums: the same bits). out may alias x or y.
void launch_add_rmsnorm(float* x, const float* y, const float* w, std::int64_t rows, std::int64_t d, float eps,
                        float* out, cudaStream_t stream);

// out (n) = silu(gate (n)) · up (n), silu(g) = g / (1 + e^-g); out may alias gate or up.
void launch_silu_mul(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t stream);

// out (n) = gelu_tanh(gate (n)) · up (n), gelu_tanh(g) = g/2 · (1 + tanh(√(2/π) · (g + 0.044715 g³)))
// (GeGLU, Gemma); out may alias gate or up.
void launch_gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t stream);

// x (n) *= s
void launch_scale(float* x, float s, std::int64_t n, cudaStream_t stream);

// x (n) = tanh(x / cap) · cap
void launch_softcap(float* x, float cap, std::int64_t n, cudaStream_t stream);

// dst row i (d) = src row rows[i] (d) for i < m; rows (m) int64 on the device. dst must not
// overlap src.
void launch_gather_rows(const float* src, const std::int64_t* rows, std::int64_t m, std::int64_t d, float* dst,
                        cudaStream_t stream);

// dst (n, cols) in `dtype` (bf16 or f16, round to nearest even) = src (n, ld) f32, columns [0, cols).
void launch_convert_rows(const float* src, std::int64_t n, std::int64_t cols, std::int64_t ld, DType dtype, void* dst,
                         cudaStream_t stream);

}  // namespace plexus::cuda
