// Row-wise and element-wise kernels: one block per row where a row reduction or gather is
// needed, grid-stride float4 loops for the element-wise ops.
#include "kernels/cuda/elementwise.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/block_dequant.h"
#include "kernels/cuda/device_math.cuh"

namespace plexus::cuda {

namespace {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `work` items: enough to fill any GPU, never more than needed.
unsigned grid_for(std::int64_t work) {
  const std::int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 8192));
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

template <typename W>
__global__ void embed_kernel(const typename W::Raw* __restrict__ table,  // (vocab, d)
                             std::int64_t vocab, std::int64_t d,
                             const std::int32_t* __restrict__ ids,       // (n)
                             float* __restrict__ x) {                    // (n, d)
  const std::int64_t t = blockIdx.x;
  const std::int64_t id = ids[t];
  float* xr = x + t * d;
  if (id < 0 || id >= vocab) {
    for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) xr[i] = __int_as_float(0x7fc00000);
    return;
  }
  const typename W::Raw* row = table + id * d;
  for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) xr[i] = to_f32(W{}, row[i]);
}

// embed_kernel for a block-format table: rows of row_bytes, 8 weights dequantised per step.
template <typename F>
__global__ void embed_blocks_kernel(const std::uint8_t* __restrict__ table,  // (vocab, row_bytes)
                                    std::int64_t vocab, std::int64_t d, std::int64_t row_bytes,
                                    const std::int32_t* __restrict__ ids,     // (n)
                                    float* __restrict__ x) {                  // (n, d)
  const std::int64_t t = blockIdx.x;
  const std::int64_t id = ids[t];
  float* xr = x + t * d;
  if (id < 0 || id >= vocab) {
    for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) xr[i] = __int_as_float(0x7fc00000);
    return;
  }
  const std::uint8_t* row = table + id * row_bytes;
  for (std::int64_t e = 8 * static_cast<std::int64_t>(threadIdx.x); e < d; e += 8 * static_cast<std::int64_t>(blockDim.x)) {
    float v[8];
    F::dequant8(row, e, v);
#pragma unroll
    for (int k = 0; k < 8; ++k) xr[e + k] = v[k];
  }
}

template <typename F>
void launch_embed_blocks(const void* table, std::int64_t vocab, std::int64_t d, const std::int32_t* ids, std::int64_t n,
                         float* x, cudaStream_t stream) {
  embed_blocks_kernel<F><<<static_cast<unsigned>(n), kThreads, 0, stream>>>(
      static_cast<const std::uint8_t*>(table), vocab, d, d / F::kElems * F::kBytes, ids, x);
}

__global__ void rmsnorm_kernel(const float* x,             // (rows, d); may alias y
                               const float* __restrict__ w, // (d)
                               std::int64_t d, float eps,
                               float* y) {                  // (rows, d)
  __shared__ float red[32];
  const float* xr = x + static_cast<std::int64_t>(blockIdx.x) * d;
  float* yr = y + static_cast<std::int64_t>(blockIdx.x) * d;
  float ss = 0.0f;
  for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const float v = xr[i];
    ss += v * v;
  }
  ss = block_sum(ss, red);
  const float scale = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
  // Each thread rewrites only the elements it read: y may alias x.
  for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = xr[i] * scale * w[i];
}

// rmsnorm_kernel after x += y. Each thread reads and writes only its own elements of x, y and
// out, so out may alias x or y.
__global__ void add_rmsnorm_kernel(float* x,                    // (rows, d)
                                   const float* y,              // (rows, d)
                                   const float* __restrict__ w, // (d)
                                   std::int64_t d, float eps,
                                   float* out) {                // (rows, d)
  __shared__ float red[32];
  const std::int64_t off = static_cast<std::int64_t>(blockIdx.x) * d;
  float* xr = x + off;
  const float* yr = y + off;
  float* outr = out + off;
  float ss = 0.0f;
  for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const float v = xr[i] + yr[i];
    xr[i] = v;
    ss += v * v;
  }
  ss = block_sum(ss, red);
  const float scale = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
  for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) outr[i] = xr[i] * scale * w[i];
}

__global__ void add_bias_kernel(float* __restrict__ y,           // (n, d)
                                const float* __restrict__ bias,  // (d)
                                std::int64_t n, std::int64_t d) {
  const std::int64_t total = n * d;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    y[i] += bias[i % d];
  }
}

// x (n) += y (n); kVec: both 16-byte aligned, float4 body then a scalar tail.
template <bool kVec>
__global__ void add_kernel(float* __restrict__ x, const float* __restrict__ y, std::int64_t n) {
  const std::int64_t start = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  std::int64_t tail = 0;
  if (kVec) {
    const std::int64_t n4 = n / 4;
    float4* x4 = reinterpret_cast<float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    for (std::int64_t i = start; i < n4; i += stride) {
      float4 a = x4[i];
      const float4 b = y4[i];
      a.x += b.x;
      a.y += b.y;
      a.z += b.z;
      a.w += b.w;
      x4[i] = a;
    }
    tail = n4 * 4;
  }
  for (std::int64_t i = tail + start; i < n; i += stride) x[i] += y[i];
}

__device__ __forceinline__ float silu_times(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// out (n) = silu(gate) · up; out may alias gate or up (each element is read before it is written
// by the same thread), so no __restrict__.
template <bool kVec>
__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, std::int64_t n) {
  const std::int64_t start = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  std::int64_t tail = 0;
  if (kVec) {
    const std::int64_t n4 = n / 4;
    for (std::int64_t i = start; i < n4; i += stride) {
      const float4 g = reinterpret_cast<const float4*>(gate)[i];
      const float4 u = reinterpret_cast<const float4*>(up)[i];
      reinterpret_cast<float4*>(out)[i] =
          make_float4(silu_times(g.x, u.x), silu_times(g.y, u.y), silu_times(g.z, u.z), silu_times(g.w, u.w));
    }
    tail = n4 * 4;
  }
  for (std::int64_t i = tail + start; i < n; i += stride) out[i] = silu_times(gate[i], up[i]);
}

// out (n) = gelu_tanh(gate) · up; out may alias gate or up (each element read, then written, by
// one thread).
__global__ void gelu_tanh_mul_kernel(const float* gate, const float* up, float* out, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const float g = gate[i];
    out[i] = 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * up[i];
  }
}

__global__ void scale_kernel(float* __restrict__ x, float s, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) x[i] *= s;
}

__global__ void softcap_kernel(float* __restrict__ x, float cap, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    x[i] = tanhf(x[i] / cap) * cap;
  }
}

__global__ void gather_rows_kernel(const float* __restrict__ src,          // (?, d)
                                   const std::int64_t* __restrict__ rows,  // (m)
                                   std::int64_t d, float* __restrict__ dst) {  // (m, d)
  const std::int64_t i = blockIdx.x;
  const float* s = src + rows[i] * d;
  float* o = dst + i * d;
  for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) o[c] = s[c];
}

template <typename Out>
__global__ void convert_rows_kernel(const float* __restrict__ src,  // (n, ld)
                                    std::int64_t n, std::int64_t cols, std::int64_t ld,
                                    Out* __restrict__ dst) {         // (n, cols)
  const std::int64_t total = n * cols;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / cols, c = i % cols;
    const float v = src[r * ld + c];
    if constexpr (sizeof(Out) == 2 && std::is_same_v<Out, __nv_bfloat16>) {
      dst[i] = __float2bfloat16_rn(v);
    } else {
      dst[i] = __float2half_rn(v);
    }
  }
}

}  // namespace

void launch_embed(const void* table, DType dtype, std::int64_t vocab, std::int64_t d, const std::int32_t* ids,
                  std::int64_t n, float* x, cudaStream_t stream) {
  if (n <= 0 || d <= 0) return;
  const dim3 grid(static_cast<unsigned>(n));
  switch (dtype) {
    case DType::kF32:
      embed_kernel<F32W><<<grid, kThreads, 0, stream>>>(static_cast<const float*>(table), vocab, d, ids, x);
      break;
    case DType::kBF16:
      embed_kernel<BF16W><<<grid, kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(table), vocab, d, ids, x);
      break;
    case DType::kF16:
      embed_kernel<F16W><<<grid, kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(table), vocab, d, ids, x);
      break;
    default:  // the block formats (with_block_tag's switch names each)
      blocks::with_block_tag(dtype, [&](auto tag) { launch_embed_blocks<decltype(tag)>(table, vocab, d, ids, n, x, stream); });
      break;
  }
}

void launch_rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
                    cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return;
  const int threads = d <= 256 ? 64 : d <= 2048 ? 256 : 512;  // head_dim rows (q/k norm) get small blocks
  rmsnorm_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, w, d, eps, y);
}

void launch_add_rmsnorm(float* x, const float* y, const float* w, std::int64_t rows, std::int64_t d, float eps,
                        float* out, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return;
  const int threads = d <= 256 ? 64 : d <= 2048 ? 256 : 512;  // as launch_rmsnorm
  add_rmsnorm_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, y, w, d, eps, out);
}

void launch_add_bias(float* y, const float* bias, std::int64_t n, std::int64_t d, cudaStream_t stream) {
  if (n <= 0 || d <= 0) return;
  add_bias_kernel<<<grid_for(n * d), kThreads, 0, stream>>>(y, bias, n, d);
}

void launch_add(float* x, const float* y, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (aligned16(x) && aligned16(y)) {
    add_kernel<true><<<grid_for((n + 3) / 4), kThreads, 0, stream>>>(x, y, n);
  } else {
    add_kernel<false><<<grid_for(n), kThreads, 0, stream>>>(x, y, n);
  }
}

void launch_silu_mul(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (aligned16(gate) && aligned16(up) && aligned16(out)) {
    silu_mul_kernel<true><<<grid_for((n + 3) / 4), kThreads, 0, stream>>>(gate, up, out, n);
  } else {
    silu_mul_kernel<false><<<grid_for(n), kThreads, 0, stream>>>(gate, up, out, n);
  }
}

void launch_gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  gelu_tanh_mul_kernel<<<grid_for(n), kThreads, 0, stream>>>(gate, up, out, n);
}

void launch_scale(float* x, float s, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, s, n);
}

void launch_softcap(float* x, float cap, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  softcap_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, cap, n);
}

void launch_gather_rows(const float* src, const std::int64_t* rows, std::int64_t m, std::int64_t d, float* dst,
                        cudaStream_t stream) {
  if (m <= 0 || d <= 0) return;
  gather_rows_kernel<<<static_cast<unsigned>(m), kThreads, 0, stream>>>(src, rows, d, dst);
}

void launch_convert_rows(const float* src, std::int64_t n, std::int64_t cols, std::int64_t ld, DType dtype, void* dst,
                         cudaStream_t stream) {
  if (n <= 0 || cols <= 0) return;
  if (dtype == DType::kBF16) {
    convert_rows_kernel<<<grid_for(n * cols), kThreads, 0, stream>>>(src, n, cols, ld, static_cast<__nv_bfloat16*>(dst));
  } else {
    convert_rows_kernel<<<grid_for(n * cols), kThreads, 0, stream>>>(src, n, cols, ld, static_cast<__half*>(dst));
  }
}

}  // namespace plexus::cuda
