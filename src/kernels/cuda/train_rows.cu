// Training's row-wise kernels: one block per row where a row is reduced, one thread per column
// where columns are summed over rows (in row order), grid-stride loops for element-wise ops.
#include "kernels/cuda/train_rows.h"

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/device_math.cuh"

namespace plexus::cuda {

namespace {

constexpr int kThreads = 256;

unsigned grid_for(std::int64_t work) {
  const std::int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 8192));
}

__global__ void embed_kernel(const float* __restrict__ table,     // (vocab, d)
                             const std::int32_t* __restrict__ ids,  // (n)
                             std::int64_t d, float* __restrict__ x) {  // (n, d)
  const std::int64_t t = blockIdx.x;
  const float* row = table + static_cast<std::int64_t>(ids[t]) * d;
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) x[t * d + j] = row[j];
}

// Block (group, column tile): each thread one column of one id's row, its rows added in order.
__global__ void embed_backward_kernel(const float* __restrict__ dx,  // (n, d)
                                      const std::int32_t* __restrict__ order, const std::int32_t* __restrict__ start,
                                      const std::int32_t* __restrict__ group_id, std::int64_t d,
                                      float* __restrict__ dtable) {  // (vocab, d)
  const std::int64_t g = blockIdx.x;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  float* out = dtable + static_cast<std::int64_t>(group_id[g]) * d + j;
  float acc = *out;
  for (std::int32_t k = start[g]; k < start[g + 1]; ++k) acc += dx[static_cast<std::int64_t>(order[k]) * d + j];
  *out = acc;
}

__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w, std::int64_t d, float eps,
                               float* __restrict__ y, float* __restrict__ rstd) {
  __shared__ float red[32];
  const std::int64_t r = blockIdx.x;
  const float* xr = x + r * d;
  float ss = 0;
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) ss += xr[j] * xr[j];
  ss = block_sum(ss, red);
  const float rs = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
  if (threadIdx.x == 0) rstd[r] = rs;
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) y[r * d + j] = xr[j] * rs * w[j];
}

// dx_j += r · (g_j − x_j · r² · Σ_k g_k x_k / d), g = dy · w: one block per row.
__global__ void rmsnorm_backward_dx_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                           const float* __restrict__ w, const float* __restrict__ rstd,
                                           std::int64_t d, float* __restrict__ dx) {
  __shared__ float red[32];
  const std::int64_t r = blockIdx.x;
  const float* xr = x + r * d;
  const float* gr = dy + r * d;
  float dot = 0;
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) dot += gr[j] * w[j] * xr[j];
  dot = block_sum(dot, red);
  const float rs = rstd[r];
  const float c = rs * rs * dot / static_cast<float>(d);
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) dx[r * d + j] += rs * (gr[j] * w[j] - xr[j] * c);
}

// partials (chunks, d): chunk k's Σ over its rows, in row order, of a[r, j] (· b[r, j] · s[r]
// when b is not null). Grid (column tiles, chunks).
__global__ void column_partials_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                       const float* __restrict__ s, std::int64_t rows, std::int64_t d,
                                       float* __restrict__ partials) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kTrainRowChunk;
  const std::int64_t r1 = r0 + kTrainRowChunk < rows ? r0 + kTrainRowChunk : rows;
  float acc = 0;
  for (std::int64_t r = r0; r < r1; ++r) acc += b ? a[r * d + j] * b[r * d + j] * s[r] : a[r * d + j];
  partials[static_cast<std::int64_t>(blockIdx.y) * d + j] = acc;
}

// out (d) += Σ_k partials[k] in k order (one thread per column).
__global__ void add_partials_kernel(const float* __restrict__ partials, std::int64_t chunks, std::int64_t d,
                                    float* __restrict__ out) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  float acc = 0;
  for (std::int64_t k = 0; k < chunks; ++k) acc += partials[k * d + j];
  out[j] += acc;
}

void column_sums(const float* a, const float* b, const float* s, std::int64_t rows, std::int64_t d, float* out,
                 float* partials, cudaStream_t stream) {
  const std::int64_t chunks = (rows + kTrainRowChunk - 1) / kTrainRowChunk;
  const unsigned tiles = static_cast<unsigned>((d + kThreads - 1) / kThreads);
  column_partials_kernel<<<dim3(tiles, static_cast<unsigned>(chunks)), kThreads, 0, stream>>>(a, b, s, rows, d,
                                                                                               partials);
  add_partials_kernel<<<tiles, kThreads, 0, stream>>>(partials, chunks, d, out);
}

__global__ void rope_kernel(float* __restrict__ x, std::int64_t pairs, std::int64_t T, std::int64_t heads,
                            std::int64_t half, const float* __restrict__ cos, const float* __restrict__ sin,
                            float sign) {
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < pairs;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % half;
    const std::int64_t row = e / half;  // (token, head)
    const std::int64_t t = (row / heads) % T;
    float* v = x + row * 2 * half;
    const float c = cos[t * half + i], sn = sign * sin[t * half + i];
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * sn;
    v[i + half] = b * c + a * sn;
  }
}

__global__ void silu_mul_backward_kernel(const float* dout, const float* gate, const float* up, float* dgate,
                                         float* dup, std::int64_t n) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i], u = up[i], d = dout[i];
    const float sg = 1.0f / (1.0f + expf(-g));
    dgate[i] = d * u * sg * (1.0f + g * (1.0f - sg));
    dup[i] = d * g * sg;
  }
}

}  // namespace

void launch_train_embed(const float* table, const std::int32_t* ids, std::int64_t n, std::int64_t d, float* x,
                        cudaStream_t stream) {
  if (n == 0 || d == 0) return;
  embed_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(table, ids, d, x);
}

void launch_train_embed_backward(const float* dx, const std::int32_t* order, const std::int32_t* group_start,
                                 const std::int32_t* group_id, std::int64_t groups, std::int64_t d, float* dtable,
                                 cudaStream_t stream) {
  if (groups == 0 || d == 0) return;
  const unsigned tiles = static_cast<unsigned>((d + kThreads - 1) / kThreads);
  embed_backward_kernel<<<dim3(static_cast<unsigned>(groups), tiles), kThreads, 0, stream>>>(dx, order, group_start,
                                                                                            group_id, d, dtable);
}

void launch_train_rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
                          float* rstd, cudaStream_t stream) {
  if (rows == 0) return;
  rmsnorm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, w, d, eps, y, rstd);
}

void launch_train_rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                                   std::int64_t rows, std::int64_t d, float* dx, float* dw, float* partials,
                                   cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  rmsnorm_backward_dx_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(dy, x, w, rstd, d, dx);
  column_sums(dy, x, rstd, rows, d, dw, partials, stream);
}

void launch_column_sums_add(const float* x, std::int64_t rows, std::int64_t d, float* out, float* partials,
                            cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  column_sums(x, nullptr, nullptr, rows, d, out, partials, stream);
}

void launch_train_rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                       const float* cos, const float* sin, bool inverse, cudaStream_t stream) {
  const std::int64_t pairs = b * T * heads * (head_dim / 2);
  if (pairs == 0) return;
  rope_kernel<<<grid_for(pairs), kThreads, 0, stream>>>(x, pairs, T, heads, head_dim / 2, cos, sin,
                                                        inverse ? -1.0f : 1.0f);
}

void launch_silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                              std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  silu_mul_backward_kernel<<<grid_for(n), kThreads, 0, stream>>>(dout, gate, up, dgate, dup, n);
}

}  // namespace plexus::cuda
