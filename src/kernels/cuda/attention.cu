// Split-context attention. Partial kernel: one block per (token, kv head, split) walks its keys
// in tiles of 32 — scores of every query head of the group for the tile (a warp per key, lanes
// over head_dim), an online-softmax update (a warp per head), then acc += p·V with threads over
// (head, dim). Partials are laid out (n, n_kv, splits, group, 2 + head_dim): max, sum, acc.
// Combine kernel: one block per (token, query head) rescales and sums its splits.
#include "kernels/cuda/attention.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"

namespace plexus::cuda {

namespace {

constexpr int kTile = 32;       // keys per tile (one per lane in the softmax update)
constexpr int kThreads = 128;   // 4 warps
constexpr int kWarps = kThreads / 32;
constexpr int kMaxHeadDim = 256;
constexpr int kKeyRegs = kMaxHeadDim / 32;

struct Range {
  std::int64_t first, n_keys;  // attended positions [first, first + n_keys)
};

__device__ __forceinline__ Range attended(const TokenSlot& s, std::int64_t window) {
  const std::int64_t pos = s.pos;
  const std::int64_t first = window > 0 ? max(static_cast<std::int64_t>(0), pos - window + 1) : 0;
  return {first, pos + 1 - first};
}

__global__ void __launch_bounds__(kThreads)
attention_partial_kernel(const float* __restrict__ q,            // (n, n_heads, hd)
                         const TokenSlot* __restrict__ slots,    // (n)
                         int n_heads, int n_kv, int hd, int group, std::int64_t window, float scale, float softcap,
                         int layer, std::int64_t chunk, int splits,
                         float* __restrict__ part) {              // (n, n_kv, splits, group, 2 + hd)
  extern __shared__ float smem[];
  float* qs = smem;                // (group, hd) query · scale
  float* acc = qs + group * hd;    // (group, hd) unnormalised output
  float* ps = acc + group * hd;    // (group, kTile) scores, then probabilities, of the tile
  float* ms = ps + group * kTile;  // (group) running max
  float* ls = ms + group;          // (group) running sum of probabilities
  float* cs = ls + group;          // (group) rescale of acc for the current tile

  const int tg = blockIdx.x;  // token · n_kv + kv head
  const std::int64_t t = tg / n_kv;
  const int g = tg % n_kv;
  const int s = blockIdx.y;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  const TokenSlot slot = slots[t];
  const Range r = attended(slot, window);
  const std::int64_t begin = r.first + s * chunk;
  if (s * chunk >= r.n_keys) return;  // nothing for this split (the combine skips it)
  const std::int64_t end = s == splits - 1 ? r.first + r.n_keys : min(r.first + r.n_keys, begin + chunk);

  const std::int64_t local = layer - slot.first_layer;
  const std::int64_t head_stride = slot.capacity * hd;
  const float* keys = slot.cache + ((local * 2 + 0) * n_kv + g) * head_stride;    // (capacity, hd)
  const float* values = slot.cache + ((local * 2 + 1) * n_kv + g) * head_stride;  // (capacity, hd)

  const float* qt = q + (t * n_heads + static_cast<std::int64_t>(g) * group) * hd;  // (group, hd)
  for (int i = tid; i < group * hd; i += kThreads) {
    qs[i] = qt[i] * scale;
    acc[i] = 0.0f;
  }
  for (int h = tid; h < group; h += kThreads) {
    ms[h] = -INFINITY;
    ls[h] = 0.0f;
  }
  __syncthreads();

  for (std::int64_t k0 = begin; k0 < end; k0 += kTile) {
    const int len = static_cast<int>(min(static_cast<std::int64_t>(kTile), end - k0));
    // Scores: a warp per key, the key's elements in registers, one warp sum per head.
    for (int j = warp; j < kTile; j += kWarps) {
      if (j < len) {
        const float* kr = keys + (k0 + j) * hd;
        float kv[kKeyRegs];
#pragma unroll
        for (int u = 0; u < kKeyRegs; ++u) {
          const int c = lane + 32 * u;
          kv[u] = c < hd ? kr[c] : 0.0f;
        }
        for (int h = 0; h < group; ++h) {
          float d = 0.0f;
#pragma unroll
          for (int u = 0; u < kKeyRegs; ++u) {
            const int c = lane + 32 * u;
            if (c < hd) d += qs[h * hd + c] * kv[u];
          }
          d = warp_sum(d);
          if (softcap > 0) d = tanhf(d / softcap) * softcap;  // Gemma's attention logit soft-capping
          if (lane == 0) ps[h * kTile + j] = d;
        }
      } else if (lane == 0) {
        for (int h = 0; h < group; ++h) ps[h * kTile + j] = -INFINITY;
      }
    }
    __syncthreads();
    // Online softmax: a warp per head, a lane per key of the tile.
    for (int h = warp; h < group; h += kWarps) {
      const float m_old = ms[h];
      const float sc = ps[h * kTile + lane];
      const float m_new = fmaxf(m_old, warp_max(sc));  // finite: the tile has >= 1 key
      const float p = expf(sc - m_new);                // 0 for the -inf padding
      const float sum = warp_sum(p);
      ps[h * kTile + lane] = p;
      if (lane == 0) {
        const float c = expf(m_old - m_new);  // 0 on the first tile (m_old = -inf)
        cs[h] = c;
        ls[h] = ls[h] * c + sum;
        ms[h] = m_new;
      }
    }
    __syncthreads();
    // acc = acc · c + p · V, threads over (head, dim): consecutive threads read consecutive dims.
    const float* vt = values + k0 * hd;  // (len, hd)
    for (int i = tid; i < group * hd; i += kThreads) {
      const int h = i / hd, c = i - h * hd;
      const float* p = ps + h * kTile;
      float a = acc[i] * cs[h];
      for (int j = 0; j < len; ++j) a += p[j] * vt[static_cast<std::int64_t>(j) * hd + c];
      acc[i] = a;
    }
    __syncthreads();
  }

  float* out = part + (static_cast<std::int64_t>(tg) * splits + s) * group * (hd + 2);  // (group, 2 + hd)
  for (int i = tid; i < group * hd; i += kThreads) {
    const int h = i / hd, c = i - h * hd;
    out[h * (hd + 2) + 2 + c] = acc[i];
  }
  for (int h = tid; h < group; h += kThreads) {
    out[h * (hd + 2)] = ms[h];
    out[h * (hd + 2) + 1] = ls[h];
  }
}

__global__ void attention_combine_kernel(const float* __restrict__ part,       // (n, n_kv, splits, group, 2 + hd)
                                         const TokenSlot* __restrict__ slots,  // (n)
                                         int n_heads, int n_kv, int hd, int group, std::int64_t window,
                                         std::int64_t chunk, int splits,
                                         float* __restrict__ out) {            // (n, n_heads, hd)
  const std::int64_t t = blockIdx.x / n_heads;
  const int qh = blockIdx.x % n_heads;
  const int g = qh / group, h = qh % group;
  const Range r = attended(slots[t], window);
  const int ns = static_cast<int>(min(static_cast<std::int64_t>(splits), (r.n_keys + chunk - 1) / chunk));
  const std::int64_t stride = static_cast<std::int64_t>(group) * (hd + 2);  // one split
  const float* p0 = part + ((t * n_kv + g) * splits) * stride + static_cast<std::int64_t>(h) * (hd + 2);
  float m = -INFINITY;
  for (int s = 0; s < ns; ++s) m = fmaxf(m, p0[s * stride]);
  float l = 0.0f;
  for (int s = 0; s < ns; ++s) l += p0[s * stride + 1] * expf(p0[s * stride] - m);
  const float inv = 1.0f / l;
  float* o = out + (t * n_heads + qh) * hd;
  for (int c = threadIdx.x; c < hd; c += blockDim.x) {
    float a = 0.0f;
    for (int s = 0; s < ns; ++s) a += p0[s * stride + 2 + c] * expf(p0[s * stride] - m);
    o[c] = a * inv;
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::size_t partial_smem_bytes(std::int64_t group, std::int64_t hd) {
  return static_cast<std::size_t>(2 * group * hd + group * kTile + 3 * group) * sizeof(float);
}

}  // namespace

AttentionSplit attention_split(const AttentionGeometry& g, std::int64_t n, std::int64_t max_keys, int target_blocks) {
  const std::int64_t pairs = std::max<std::int64_t>(1, n * g.n_kv_heads);
  const std::int64_t keys = std::max<std::int64_t>(1, max_keys);
  const std::int64_t want = std::clamp<std::int64_t>(ceil_div(target_blocks, pairs), 1, ceil_div(keys, kTile));
  AttentionSplit s;
  s.chunk = ceil_div(ceil_div(keys, want), kTile) * kTile;
  s.splits = ceil_div(keys, s.chunk);  // <= want
  return s;
}

std::int64_t attention_partial_floats(const AttentionGeometry& g, std::int64_t max_tokens, int max_target_blocks) {
  // n · n_kv · splits < target + n · n_kv (splits <= ceil(target / (n · n_kv))).
  const std::int64_t group = g.n_heads / std::max<std::int64_t>(1, g.n_kv_heads);
  return (max_tokens * g.n_kv_heads + max_target_blocks) * group * (g.head_dim + 2);
}

void launch_attention(const float* q, const TokenSlot* slots, std::int64_t n, const AttentionGeometry& g,
                      const AttentionSplit& split, int layer, float* partials, std::int64_t partial_floats, float* out,
                      cudaStream_t stream) {
  if (n <= 0) return;
  if (g.n_kv_heads <= 0 || g.n_heads % g.n_kv_heads != 0 || g.head_dim <= 0 || g.head_dim > kMaxHeadDim) {
    throw RuntimeError("CUDA attention: unsupported geometry (" + std::to_string(g.n_heads) + " heads, " +
                       std::to_string(g.n_kv_heads) + " kv heads, head_dim " + std::to_string(g.head_dim) +
                       "; head_dim must be <= 256)");
  }
  const std::int64_t group = g.n_heads / g.n_kv_heads;
  const std::int64_t need = n * g.n_kv_heads * split.splits * group * (g.head_dim + 2);
  if (need > partial_floats) {
    throw RuntimeError("CUDA attention: " + std::to_string(need) + " partial floats needed, scratch holds " +
                       std::to_string(partial_floats));
  }
  const std::size_t smem = partial_smem_bytes(group, g.head_dim);
  if (smem > 48 * 1024) {  // large groups: opt in to more shared memory where the device has it
    int device = 0, optin = 0;
    PLEXUS_CUDA_CHECK(cudaGetDevice(&device), "CUDA attention");
    PLEXUS_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "CUDA attention");
    if (smem > static_cast<std::size_t>(optin)) {
      throw RuntimeError("CUDA attention: a kv head group of " + std::to_string(group) + " heads of " +
                         std::to_string(g.head_dim) + " needs " + std::to_string(smem) +
                         " bytes of shared memory; the device has " + std::to_string(optin));
    }
    PLEXUS_CUDA_CHECK(cudaFuncSetAttribute(attention_partial_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem)),
                      "CUDA attention: allowing " + std::to_string(smem) + " bytes of shared memory");
  }
  const dim3 grid(static_cast<unsigned>(n * g.n_kv_heads), static_cast<unsigned>(split.splits));
  attention_partial_kernel<<<grid, kThreads, smem, stream>>>(
      q, slots, static_cast<int>(g.n_heads), static_cast<int>(g.n_kv_heads), static_cast<int>(g.head_dim),
      static_cast<int>(group), g.window, g.scale, g.softcap, layer, split.chunk, static_cast<int>(split.splits), partials);
  const int threads = g.head_dim <= 64 ? 64 : 128;
  attention_combine_kernel<<<static_cast<unsigned>(n * g.n_heads), threads, 0, stream>>>(
      partials, slots, static_cast<int>(g.n_heads), static_cast<int>(g.n_kv_heads), static_cast<int>(g.head_dim),
      static_cast<int>(group), g.window, split.chunk, static_cast<int>(split.splits), out);
}

}  // namespace plexus::cuda
