// The row-wise and element-wise CUDA kernels of training (CudaTrainOps, train/cuda): the f32
// embedding and its deterministic backward, rmsnorm keeping rstd and its backward, rotate-half
// rope and its inverse, silu·mul's backward, bias gradients. Every pointer is device memory,
// every launch asynchronous on `stream`; every reduction in a fixed order (bitwise repeatable).
// Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace plexus::cuda {

// x (n, d) = rows ids[i] (device, n; checked by the caller) of table (vocab, d).
void launch_train_embed(const float* table, const std::int32_t* ids, std::int64_t n, std::int64_t d, float* x,
                        cudaStream_t stream);

// dtable row group_id[g] += Σ dx rows order[group_start[g] .. group_start[g+1]) (d), added one
// row after the other in that order: `order` lists the rows of each distinct id in increasing i,
// so a repeated id's rows are added in i order, by one thread per column (no atomics).
// group_id (groups), group_start (groups + 1), order (n): device.
void launch_train_embed_backward(const float* dx, const std::int32_t* order, const std::int32_t* group_start,
                                 const std::int32_t* group_id, std::int64_t groups, std::int64_t d, float* dtable,
                                 cudaStream_t stream);

// y (rows, d) = x · rstd · w (d), rstd (rows) = 1 / sqrt(mean(x²) + eps); y does not alias x.
void launch_train_rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
                          float* rstd, cudaStream_t stream);

// Rows per partial sum of the rmsnorm and bias weight gradients: a constant, so the sums do not
// depend on the device.
inline constexpr std::int64_t kTrainRowChunk = 64;
// Floats of scratch launch_train_rmsnorm_backward and launch_column_sums_add need for rows × d.
inline std::int64_t train_row_partials(std::int64_t rows, std::int64_t d) {
  return (rows + kTrainRowChunk - 1) / kTrainRowChunk * d;
}

// dx (rows, d) += ∂/∂x of y = x · rstd · w; dw (d) += Σ_rows dy · x · rstd: partial sums over
// kTrainRowChunk rows into `partials` (train_row_partials floats), then added in chunk order.
void launch_train_rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                                   std::int64_t rows, std::int64_t d, float* dx, float* dw, float* partials,
                                   cudaStream_t stream);

// out (d) += Σ_rows x (rows, d), in the same fixed chunks (`partials`: train_row_partials floats).
void launch_column_sums_add(const float* x, std::int64_t rows, std::int64_t d, float* out, float* partials,
                            cudaStream_t stream);

// Rotates x (b·T, heads, head_dim) in place, pairs (i, i + head_dim/2), token t of each sequence
// by the angle of row t of cos, sin (T, head_dim / 2); `inverse`: by minus the angle.
void launch_train_rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                       const float* cos, const float* sin, bool inverse, cudaStream_t stream);

// Through out = silu(gate) · up: dgate, dup (n) written; they may alias gate and up.
void launch_silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                              std::int64_t n, cudaStream_t stream);

}  // namespace plexus::cuda
