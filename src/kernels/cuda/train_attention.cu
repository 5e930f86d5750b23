// Flash-style training attention in f32 (CUDA cores): a block takes 32 query rows (forward, dq)
// or 32 key rows (dk, dv) of one head, 4 warps of 8 rows each; the other side streams through
// shared memory in tiles of 32, lane l taking row l of the tile for the dot products and channel
// l + 32·i for the sums. Online softmax in the forward; the backward recomputes p = exp(s − lse).
#include "kernels/cuda/train_attention.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/device_math.cuh"

namespace plexus::cuda {

namespace {

constexpr int kTile = 32;         // query or key rows per tile
constexpr int kWarps = 4;
constexpr int kRowsPerWarp = kTile / kWarps;
constexpr int kThreads = 32 * kWarps;

// The first key query t reads.
__device__ __forceinline__ std::int64_t first_key(std::int64_t t, std::int64_t window) {
  return window > 0 ? (t - window + 1 > 0 ? t - window + 1 : 0) : 0;
}

// The last query that reads key j.
__device__ __forceinline__ std::int64_t last_query(std::int64_t j, std::int64_t T, std::int64_t window) {
  return window > 0 && j + window - 1 < T - 1 ? j + window - 1 : T - 1;
}

// dst (kTile, stride) = rows [r0, r0 + kTile) of src (stride `ld`, columns [0, hd)), zero past `last`.
__device__ __forceinline__ void load_tile(float* dst, int stride, const float* src, std::int64_t ld, std::int64_t r0,
                                          std::int64_t last, int hd) {
  for (int e = threadIdx.x; e < kTile * hd; e += blockDim.x) {
    const int r = e / hd, c = e - r * hd;
    dst[r * stride + c] = r0 + r <= last ? src[(r0 + r) * ld + c] : 0.0f;
  }
}

__device__ __forceinline__ float dot_rows(const float* a, const float* b, int hd) {
  float acc = 0;
  for (int c = 0; c < hd; ++c) acc += a[c] * b[c];
  return acc;
}

// Grid (query tiles, n_heads, b). Shared: Q (kTile, hd), K (kTile, hd + 1), V (kTile, hd).
template <int CPL>
__global__ void __launch_bounds__(kThreads) forward_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                                           const float* __restrict__ v, TrainAttentionDims d,
                                                           float* __restrict__ out, float* __restrict__ lse) {
  extern __shared__ float smem[];
  const int hd = static_cast<int>(d.head_dim), ks = hd + 1;
  float* qs = smem;
  float* kt = qs + kTile * hd;
  float* vt = kt + kTile * ks;
  const std::int64_t T = d.T, s = blockIdx.z, h = blockIdx.y, t0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t kh = h / (d.n_heads / d.n_kv_heads);
  const std::int64_t qw = d.n_heads * hd, kw = d.n_kv_heads * hd;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t t_last = min(T - 1, t0 + kTile - 1);
  load_tile(qs, hd, q + s * T * qw + h * hd, qw, t0, t_last, hd);

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][CPL];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0;
#pragma unroll
    for (int c = 0; c < CPL; ++c) acc[i][c] = 0;
  }
  for (std::int64_t j0 = first_key(t0, d.window); j0 <= t_last; j0 += kTile) {
    __syncthreads();  // the previous tile is read by every warp
    load_tile(kt, ks, k + s * T * kw + kh * hd, kw, j0, t_last, hd);
    load_tile(vt, hd, v + s * T * kw + kh * hd, kw, j0, t_last, hd);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int r = warp * kRowsPerWarp + i;
      const std::int64_t t = t0 + r, lo = first_key(t, d.window);
      if (t >= T || j0 > t || j0 + kTile - 1 < lo) continue;  // the same for the whole warp
      const std::int64_t j = j0 + lane;
      const bool valid = j >= lo && j <= t;
      const float sc = valid ? dot_rows(qs + r * hd, kt + lane * ks, hd) * d.scale : -INFINITY;
      const float m_new = fmaxf(m[i], warp_max(sc));  // finite: the tile holds a key of row t
      const float p = valid ? expf(sc - m_new) : 0.0f;
      const float alpha = expf(m[i] - m_new);
      l[i] = l[i] * alpha + warp_sum(p);
#pragma unroll
      for (int c = 0; c < CPL; ++c) acc[i][c] *= alpha;
      for (int jj = 0; jj < kTile; ++jj) {
        const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
        for (int c = 0; c < CPL; ++c) {
          const int ch = lane + 32 * c;
          if (ch < hd) acc[i][c] += pj * vt[jj * hd + ch];
        }
      }
      m[i] = m_new;
    }
  }
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const std::int64_t t = t0 + warp * kRowsPerWarp + i;
    if (t >= T) continue;
    float* o = out + (s * T + t) * qw + h * hd;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      const int ch = lane + 32 * c;
      if (ch < hd) o[ch] = acc[i][c] / l[i];
    }
    if (lane == 0) lse[(s * d.n_heads + h) * T + t] = m[i] + logf(l[i]);
  }
}

// row_dot (b, n_heads, T) = Σ_c dout · out of each query row: one warp per row.
__global__ void row_dot_kernel(const float* __restrict__ dout, const float* __restrict__ out, TrainAttentionDims d,
                               float* __restrict__ row_dot) {
  const std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;  // (s, h, t)
  const int lane = threadIdx.x & 31;
  if (row >= d.b * d.n_heads * d.T) return;
  const std::int64_t t = row % d.T, h = (row / d.T) % d.n_heads, s = row / (d.T * d.n_heads);
  const std::int64_t off = (s * d.T + t) * d.n_heads * d.head_dim + h * d.head_dim;
  float acc = 0;
  for (std::int64_t c = lane; c < d.head_dim; c += 32) acc += dout[off + c] * out[off + c];
  acc = warp_sum(acc);
  if (lane == 0) row_dot[row] = acc;
}

// dq of 32 query rows: grid (query tiles, n_heads, b). Shared: Q, dO (kTile, hd), K, V (kTile, hd + 1).
template <int CPL>
__global__ void __launch_bounds__(kThreads) dq_kernel(const float* __restrict__ dout, const float* __restrict__ q,
                                                      const float* __restrict__ k, const float* __restrict__ v,
                                                      const float* __restrict__ lse, const float* __restrict__ row_dot,
                                                      TrainAttentionDims d, float* __restrict__ dq) {
  extern __shared__ float smem[];
  const int hd = static_cast<int>(d.head_dim), ks = hd + 1;
  float* qs = smem;
  float* dos = qs + kTile * hd;
  float* kt = dos + kTile * hd;
  float* vt = kt + kTile * ks;
  const std::int64_t T = d.T, s = blockIdx.z, h = blockIdx.y, t0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t kh = h / (d.n_heads / d.n_kv_heads);
  const std::int64_t qw = d.n_heads * hd, kw = d.n_kv_heads * hd;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t t_last = min(T - 1, t0 + kTile - 1);
  load_tile(qs, hd, q + s * T * qw + h * hd, qw, t0, t_last, hd);
  load_tile(dos, hd, dout + s * T * qw + h * hd, qw, t0, t_last, hd);

  float lse_r[kRowsPerWarp], dot_r[kRowsPerWarp], acc[kRowsPerWarp][CPL];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const std::int64_t t = t0 + warp * kRowsPerWarp + i;
    lse_r[i] = t < T ? lse[(s * d.n_heads + h) * T + t] : 0.0f;
    dot_r[i] = t < T ? row_dot[(s * d.n_heads + h) * T + t] : 0.0f;
#pragma unroll
    for (int c = 0; c < CPL; ++c) acc[i][c] = 0;
  }
  for (std::int64_t j0 = first_key(t0, d.window); j0 <= t_last; j0 += kTile) {
    __syncthreads();
    load_tile(kt, ks, k + s * T * kw + kh * hd, kw, j0, t_last, hd);
    load_tile(vt, ks, v + s * T * kw + kh * hd, kw, j0, t_last, hd);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int r = warp * kRowsPerWarp + i;
      const std::int64_t t = t0 + r, lo = first_key(t, d.window);
      if (t >= T || j0 > t || j0 + kTile - 1 < lo) continue;
      const std::int64_t j = j0 + lane;
      const bool valid = j >= lo && j <= t;
      float ds = 0;
      if (valid) {
        const float p = expf(dot_rows(qs + r * hd, kt + lane * ks, hd) * d.scale - lse_r[i]);
        const float dp = dot_rows(dos + r * hd, vt + lane * ks, hd);
        ds = p * (dp - dot_r[i]) * d.scale;
      }
      for (int jj = 0; jj < kTile; ++jj) {
        const float dsj = __shfl_sync(0xffffffffu, ds, jj);
#pragma unroll
        for (int c = 0; c < CPL; ++c) {
          const int ch = lane + 32 * c;
          if (ch < hd) acc[i][c] += dsj * kt[jj * ks + ch];
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const std::int64_t t = t0 + warp * kRowsPerWarp + i;
    if (t >= T) continue;
    float* o = dq + (s * T + t) * qw + h * hd;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      const int ch = lane + 32 * c;
      if (ch < hd) o[ch] = acc[i][c];
    }
  }
}

// dk, dv of 32 key rows of one kv head, over the query heads of its group in order: grid (key
// tiles, n_kv_heads, b). Shared: K, V (kTile, hd), Q, dO (kTile, hd + 1), lse, row_dot (kTile).
template <int CPL>
__global__ void __launch_bounds__(kThreads) dkv_kernel(const float* __restrict__ dout, const float* __restrict__ q,
                                                       const float* __restrict__ k, const float* __restrict__ v,
                                                       const float* __restrict__ lse, const float* __restrict__ row_dot,
                                                       TrainAttentionDims d, float* __restrict__ dk,
                                                       float* __restrict__ dv) {
  extern __shared__ float smem[];
  const int hd = static_cast<int>(d.head_dim), qs_stride = hd + 1;
  float* kt = smem;
  float* vt = kt + kTile * hd;
  float* qt = vt + kTile * hd;
  float* dot = qt + kTile * qs_stride;
  float* lse_t = dot + kTile * qs_stride;
  float* rd_t = lse_t + kTile;
  const std::int64_t T = d.T, s = blockIdx.z, kh = blockIdx.y, j0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t group = d.n_heads / d.n_kv_heads;
  const std::int64_t qw = d.n_heads * hd, kw = d.n_kv_heads * hd;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t j_last = min(T - 1, j0 + kTile - 1);
  load_tile(kt, hd, k + s * T * kw + kh * hd, kw, j0, j_last, hd);
  load_tile(vt, hd, v + s * T * kw + kh * hd, kw, j0, j_last, hd);
  const std::int64_t i_end = last_query(j_last, T, d.window);

  float gk[kRowsPerWarp][CPL], gv[kRowsPerWarp][CPL];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int c = 0; c < CPL; ++c) gk[r][c] = gv[r][c] = 0;
  for (std::int64_t h = kh * group; h < (kh + 1) * group; ++h) {
    for (std::int64_t i0 = j0; i0 <= i_end; i0 += kTile) {
      __syncthreads();
      load_tile(qt, qs_stride, q + s * T * qw + h * hd, qw, i0, i_end, hd);
      load_tile(dot, qs_stride, dout + s * T * qw + h * hd, qw, i0, i_end, hd);
      if (threadIdx.x < kTile) {
        const std::int64_t i = i0 + threadIdx.x;
        lse_t[threadIdx.x] = i <= i_end ? lse[(s * d.n_heads + h) * T + i] : 0.0f;
        rd_t[threadIdx.x] = i <= i_end ? row_dot[(s * d.n_heads + h) * T + i] : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const int kr = warp * kRowsPerWarp + r;
        const std::int64_t j = j0 + kr, hi = last_query(j, T, d.window);
        if (j >= T || i0 > hi || i0 + kTile - 1 < j) continue;  // the same for the whole warp
        const std::int64_t i = i0 + lane;
        const bool valid = i >= j && i <= hi;
        float p = 0, ds = 0;
        if (valid) {
          p = expf(dot_rows(qt + lane * qs_stride, kt + kr * hd, hd) * d.scale - lse_t[lane]);
          const float dp = dot_rows(dot + lane * qs_stride, vt + kr * hd, hd);
          ds = p * (dp - rd_t[lane]) * d.scale;
        }
        for (int ii = 0; ii < kTile; ++ii) {
          const float pi = __shfl_sync(0xffffffffu, p, ii);
          const float dsi = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
          for (int c = 0; c < CPL; ++c) {
            const int ch = lane + 32 * c;
            if (ch < hd) {
              gv[r][c] += pi * dot[ii * qs_stride + ch];
              gk[r][c] += dsi * qt[ii * qs_stride + ch];
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const std::int64_t j = j0 + warp * kRowsPerWarp + r;
    if (j >= T) continue;
    const std::int64_t off = (s * T + j) * kw + kh * hd;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      const int ch = lane + 32 * c;
      if (ch < hd) {
        dk[off + ch] = gk[r][c];
        dv[off + ch] = gv[r][c];
      }
    }
  }
}

void check_dims(const TrainAttentionDims& d) {
  if (d.head_dim <= 0 || d.head_dim > kTrainAttentionMaxHeadDim || d.n_kv_heads <= 0 || d.n_heads % d.n_kv_heads != 0)
    throw std::invalid_argument("CUDA training attention: head_dim " + std::to_string(d.head_dim) + " (at most " +
                                std::to_string(kTrainAttentionMaxHeadDim) + "), " + std::to_string(d.n_heads) +
                                " heads over " + std::to_string(d.n_kv_heads) + " kv heads");
}

// Launches kernel<CPL> with `smem` bytes of dynamic shared memory (opting in above 48 KiB).
template <typename Kernel, typename... Args>
void launch(Kernel kernel, dim3 grid, std::size_t smem, cudaStream_t stream, Args... args) {
  if (smem > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  kernel<<<grid, kThreads, smem, stream>>>(args...);
}

// Calls f(integral_constant<CPL>) for the channels per lane head_dim needs.
template <typename F>
void with_cpl(std::int64_t head_dim, F&& f) {
  if (head_dim <= 32) f(std::integral_constant<int, 1>{});
  else if (head_dim <= 64) f(std::integral_constant<int, 2>{});
  else if (head_dim <= 128) f(std::integral_constant<int, 4>{});
  else f(std::integral_constant<int, 8>{});
}

}  // namespace

void launch_train_attention(const float* q, const float* k, const float* v, const TrainAttentionDims& d, float* out,
                            float* lse, cudaStream_t stream) {
  if (d.b == 0 || d.T == 0 || d.n_heads == 0) return;
  check_dims(d);
  const dim3 grid(static_cast<unsigned>((d.T + kTile - 1) / kTile), static_cast<unsigned>(d.n_heads),
                  static_cast<unsigned>(d.b));
  const std::size_t smem = sizeof(float) * kTile * (3 * d.head_dim + 1);
  with_cpl(d.head_dim, [&](auto cpl) { launch(forward_kernel<decltype(cpl)::value>, grid, smem, stream, q, k, v, d, out, lse); });
}

void launch_train_attention_backward(const float* dout, const float* q, const float* k, const float* v,
                                     const float* out, const float* lse, const TrainAttentionDims& d, float* dq,
                                     float* dk, float* dv, float* row_dot, cudaStream_t stream) {
  if (d.b == 0 || d.T == 0 || d.n_heads == 0) return;
  check_dims(d);
  const std::int64_t rows = d.b * d.n_heads * d.T;
  row_dot_kernel<<<static_cast<unsigned>((rows * 32 + kThreads - 1) / kThreads), kThreads, 0, stream>>>(dout, out, d,
                                                                                                      row_dot);
  const unsigned tiles = static_cast<unsigned>((d.T + kTile - 1) / kTile);
  const std::size_t smem = sizeof(float) * (kTile * (4 * d.head_dim + 2) + 2 * kTile);
  with_cpl(d.head_dim, [&](auto cpl) {
    constexpr int c = decltype(cpl)::value;
    launch(dq_kernel<c>, dim3(tiles, static_cast<unsigned>(d.n_heads), static_cast<unsigned>(d.b)), smem, stream, dout,
           q, k, v, lse, static_cast<const float*>(row_dot), d, dq);
    launch(dkv_kernel<c>, dim3(tiles, static_cast<unsigned>(d.n_kv_heads), static_cast<unsigned>(d.b)), smem, stream,
           dout, q, k, v, lse, static_cast<const float*>(row_dot), d, dk, dv);
  });
}

}  // namespace plexus::cuda
