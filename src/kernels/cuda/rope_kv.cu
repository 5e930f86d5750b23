// One block per (token, head): query heads are rotated in place; key heads are rotated in place
// and written, with the value head, to the token's cache slot.
#include "kernels/cuda/rope_kv.h"

#include <cuda_runtime.h>

namespace plexus::cuda {

namespace {

__global__ void rope_store_kv_kernel(float* __restrict__ q,          // (n, n_heads, hd)
                                     float* __restrict__ k,          // (n, n_kv, hd)
                                     const float* __restrict__ v,    // (n, n_kv, hd)
                                     const float* __restrict__ cos,  // (n, hd / 2)
                                     const float* __restrict__ sin,  // (n, hd / 2)
                                     const TokenSlot* __restrict__ slots,  // (n)
                                     int n_heads, int n_kv, int hd, int layer, bool interleaved, int rot, float scale) {
  const std::int64_t t = blockIdx.x;
  const int head = blockIdx.y;  // [0, n_heads): query head; [n_heads, n_heads + n_kv): kv head
  const int half = rot / 2;     // the rotated pairs: dims [0, rot), rot = hd but for partial rotary
  const float* c = cos + t * (hd / 2);
  const float* s = sin + t * (hd / 2);
  const bool is_q = head < n_heads;
  // Pair i: elements (i, i + half), or (2i, 2i + 1) when interleaved.
  const int step = interleaved ? 2 : 1, off = interleaved ? 1 : half;
  const int g = head - n_heads;
  float* x = is_q ? q + (t * n_heads + head) * hd : k + (t * n_kv + g) * hd;  // (hd)
  if (is_q) {
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
      const int a = i * step;
      const float x0 = x[a], x1 = x[a + off], ci = c[i] * scale, si = s[i] * scale;
      x[a] = x0 * ci - x1 * si;
      x[a + off] = x1 * ci + x0 * si;
    }
    return;
  }
  const TokenSlot slot = slots[t];
  const std::int64_t local = layer - slot.first_layer;
  const std::int64_t head_stride = slot.capacity * hd;  // one (capacity, hd) head block
  float* kc = slot.cache + ((local * 2 + 0) * n_kv + g) * head_stride + static_cast<std::int64_t>(slot.pos) * hd;
  float* vc = slot.cache + ((local * 2 + 1) * n_kv + g) * head_stride + static_cast<std::int64_t>(slot.pos) * hd;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const int a = i * step;
    const float x0 = x[a], x1 = x[a + off], ci = c[i] * scale, si = s[i] * scale;
    const float r0 = x0 * ci - x1 * si;
    const float r1 = x1 * ci + x0 * si;
    x[a] = r0;
    x[a + off] = r1;
    kc[a] = r0;
    kc[a + off] = r1;
  }
  for (int i = rot + threadIdx.x; i < hd; i += blockDim.x) kc[i] = x[i];  // partial rotary: the unrotated dims
  const float* vr = v + (t * n_kv + g) * hd;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) vc[i] = vr[i];
}

}  // namespace

void launch_rope_store_kv(float* q, float* k, const float* v, const float* cos, const float* sin,
                          const TokenSlot* slots, std::int64_t n, std::int64_t n_heads, std::int64_t n_kv_heads,
                          std::int64_t head_dim, int layer, bool interleaved, std::int64_t rotary_dim, float scale,
                          cudaStream_t stream) {
  if (n <= 0) return;
  const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(n_heads + n_kv_heads));
  const int threads = head_dim / 2 <= 32 ? 32 : 64;
  rope_store_kv_kernel<<<grid, threads, 0, stream>>>(q, k, v, cos, sin, slots, static_cast<int>(n_heads),
                                                     static_cast<int>(n_kv_heads), static_cast<int>(head_dim), layer, interleaved,
                                                     static_cast<int>(rotary_dim > 0 ? rotary_dim : head_dim), scale);
}

}  // namespace plexus::cuda
