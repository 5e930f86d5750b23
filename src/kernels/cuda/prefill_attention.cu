// Tiled causal attention for prefill. A block of 256 threads owns R = 64 query rows (the
// group's heads of up to 64 / group tokens) and walks the keys its tokens attend, 64 at a time:
// the key/value tile is staged in shared memory, each thread computes a 4 × 4 block of scores
// (rows × keys) from float4 shared loads, a warp per row updates the online softmax, and each
// thread accumulates HD / 16 rows × 4 dims of the output in registers.
#include "kernels/cuda/prefill_attention.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"

namespace plexus::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRows = static_cast<int>(kPrefillRows);  // query rows per block
constexpr int kKeys = 64;                                // keys per tile

template <int HD>
struct Smem {
  static constexpr int kLd = HD + 4;       // padded row of q and k: float4 reads of 16 rows are conflict-free
  static constexpr int kLdp = kKeys + 4;   // padded row of scores
  static constexpr int q = 0;                              // (kRows, kLd) q · scale
  static constexpr int k = q + kRows * kLd;                // (kKeys, kLd)
  static constexpr int v = k + kKeys * kLd;                // (kKeys, HD)
  static constexpr int p = v + kKeys * HD;                 // (kRows, kLdp) scores, then probabilities
  static constexpr int m = p + kRows * kLdp;               // (kRows) running max
  static constexpr int l = m + kRows;                      // (kRows) running sum
  static constexpr int c = l + kRows;                      // (kRows) rescale of this tile
  static constexpr int floats = c + kRows;
  static constexpr std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
};

template <int HD>
__global__ void __launch_bounds__(kThreads)
prefill_attention_kernel(const float* __restrict__ q,              // (n, n_heads, HD)
                         const TokenSlot* __restrict__ slots,      // (n)
                         const QueryTile* __restrict__ tiles,      // (n_tiles)
                         int n_heads, int n_kv, int group, std::int64_t window, float scale, int layer,
                         float* __restrict__ out) {                // (n, n_heads, HD)
  using S = Smem<HD>;
  extern __shared__ __align__(16) float smem[];
  float* qs = smem + S::q;
  float* ks = smem + S::k;
  float* vs = smem + S::v;
  float* ps = smem + S::p;
  float* ms = smem + S::m;
  float* ls = smem + S::l;
  float* cs = smem + S::c;

  const QueryTile tile = tiles[blockIdx.x];
  const int g = blockIdx.y;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const TokenSlot slot = slots[tile.first];
  const std::int64_t p0 = slot.pos;  // token i of the tile is at position p0 + i
  const int rows = tile.count * group;  // valid rows: row r is token r / group, head r % group

  const std::int64_t local = layer - slot.first_layer;
  const std::int64_t head_stride = slot.capacity * HD;
  const float* keys = slot.cache + ((local * 2 + 0) * n_kv + g) * head_stride;    // (capacity, HD)
  const float* values = slot.cache + ((local * 2 + 1) * n_kv + g) * head_stride;  // (capacity, HD)

  // Stage q · scale; rows past the tile are zero.
  for (int e = tid; e < kRows * (HD / 4); e += kThreads) {
    const int r = e / (HD / 4), d = (e % (HD / 4)) * 4;
    float4 v4 = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < rows) {
      const int i = r / group, h = r % group;
      v4 = *reinterpret_cast<const float4*>(q + ((static_cast<std::int64_t>(tile.first) + i) * n_heads + g * group + h) *
                                                    HD + d);
      v4.x *= scale;
      v4.y *= scale;
      v4.z *= scale;
      v4.w *= scale;
    }
    *reinterpret_cast<float4*>(qs + r * S::kLd + d) = v4;
  }
  for (int r = tid; r < kRows; r += kThreads) {
    ms[r] = -INFINITY;
    ls[r] = 0.f;
  }

  // Score block of this thread: rows sr·4 .. sr·4+3, keys sk + 16·u.
  const int sr = tid / 16, sk = tid % 16;
  // Output block of this thread: rows orow + kRowGroups·i, dims od .. od+3.
  constexpr int kDimGroups = HD / 4;
  constexpr int kRowGroups = kThreads / kDimGroups;
  constexpr int kRowsPerThread = kRows / kRowGroups;  // HD / 16
  const int od = (tid % kDimGroups) * 4, orow = tid / kDimGroups;
  float acc[kRowsPerThread][4];
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;

  const std::int64_t last = p0 + tile.count - 1;  // the last key any row attends
  const std::int64_t begin = window > 0 ? max(static_cast<std::int64_t>(0), p0 - window + 1) : 0;

  for (std::int64_t k0 = begin; k0 <= last; k0 += kKeys) {
    __syncthreads();  // q staged / the previous tile's k, v, p no longer read
#pragma unroll
    for (int e = tid; e < kKeys * (HD / 4); e += kThreads) {
      const int j = e / (HD / 4), d = (e % (HD / 4)) * 4;
      float4 kv = make_float4(0.f, 0.f, 0.f, 0.f), vv = kv;
      if (k0 + j <= last) {
        kv = *reinterpret_cast<const float4*>(keys + (k0 + j) * HD + d);
        vv = *reinterpret_cast<const float4*>(values + (k0 + j) * HD + d);
      }
      *reinterpret_cast<float4*>(ks + j * S::kLd + d) = kv;
      *reinterpret_cast<float4*>(vs + j * HD + d) = vv;
    }
    __syncthreads();

    // Scores, masked to each row's [first, pos].
    float sc[4][4];
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) sc[a][b] = 0.f;
#pragma unroll 4
    for (int d = 0; d < HD; d += 4) {
      float4 qa[4], kb[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) qa[a] = *reinterpret_cast<const float4*>(qs + (sr * 4 + a) * S::kLd + d);
#pragma unroll
      for (int b = 0; b < 4; ++b) kb[b] = *reinterpret_cast<const float4*>(ks + (sk + 16 * b) * S::kLd + d);
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b)
          sc[a][b] += qa[a].x * kb[b].x + qa[a].y * kb[b].y + qa[a].z * kb[b].z + qa[a].w * kb[b].w;
    }
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const int r = sr * 4 + a;
      const std::int64_t pos = p0 + r / group;
      const std::int64_t first = window > 0 ? max(static_cast<std::int64_t>(0), pos - window + 1) : 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const std::int64_t kp = k0 + sk + 16 * b;
        const bool ok = r < rows && kp <= pos && kp >= first;
        ps[r * S::kLdp + sk + 16 * b] = ok ? sc[a][b] : -INFINITY;
      }
    }
    __syncthreads();

    // Online softmax: a warp per row, two keys per lane.
    for (int r = warp; r < kRows; r += kWarps) {
      float* pr = ps + r * S::kLdp;
      const float s0 = pr[lane], s1 = pr[lane + 32];
      const float m_old = ms[r];
      const float m_new = fmaxf(m_old, warp_max(fmaxf(s0, s1)));
      float e0 = 0.f, e1 = 0.f, c = 1.f;
      if (m_new != -INFINITY) {  // a row with no key yet in range keeps its state
        e0 = expf(s0 - m_new);
        e1 = expf(s1 - m_new);
        c = expf(m_old - m_new);
      }
      const float sum = warp_sum(e0 + e1);
      pr[lane] = e0;
      pr[lane + 32] = e1;
      if (lane == 0) {
        cs[r] = c;
        ls[r] = ls[r] * c + sum;
        ms[r] = m_new;
      }
    }
    __syncthreads();

    // acc = acc · c + p · V
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const float c = cs[orow + kRowGroups * i];
      acc[i][0] *= c;
      acc[i][1] *= c;
      acc[i][2] *= c;
      acc[i][3] *= c;
    }
    for (int j = 0; j < kKeys; ++j) {
      const float4 v4 = *reinterpret_cast<const float4*>(vs + j * HD + od);
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        const float p = ps[(orow + kRowGroups * i) * S::kLdp + j];
        acc[i][0] += p * v4.x;
        acc[i][1] += p * v4.y;
        acc[i][2] += p * v4.z;
        acc[i][3] += p * v4.w;
      }
    }
  }
  __syncthreads();

#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const int r = orow + kRowGroups * i;
    if (r >= rows) continue;
    const int t = r / group, h = r % group;
    const float inv = 1.0f / ls[r];
    float* o = out + ((static_cast<std::int64_t>(tile.first) + t) * n_heads + g * group + h) * HD + od;
    *reinterpret_cast<float4*>(o) = make_float4(acc[i][0] * inv, acc[i][1] * inv, acc[i][2] * inv, acc[i][3] * inv);
  }
}

template <int HD>
void launch_hd(const float* q, const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles,
               const AttentionGeometry& g, int layer, float* out, cudaStream_t stream) {
  auto kernel = prefill_attention_kernel<HD>;
  PLEXUS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(Smem<HD>::bytes)),
                    "prefill attention: allowing " + std::to_string(Smem<HD>::bytes) + " bytes of shared memory");
  const dim3 grid(static_cast<unsigned>(n_tiles), static_cast<unsigned>(g.n_kv_heads));
  kernel<<<grid, kThreads, Smem<HD>::bytes, stream>>>(q, slots, tiles, static_cast<int>(g.n_heads),
                                                       static_cast<int>(g.n_kv_heads),
                                                       static_cast<int>(g.n_heads / g.n_kv_heads), g.window, g.scale,
                                                       layer, out);
}

}  // namespace

std::int64_t make_query_tiles(const TokenSlot* slots, std::int64_t n, std::int64_t tile_tokens, QueryTile* out) {
  std::int64_t n_tiles = 0;
  for (std::int64_t t = 0; t < n; ++t) {
    QueryTile* last = n_tiles > 0 ? &out[n_tiles - 1] : nullptr;
    const bool extends = last != nullptr && last->count < tile_tokens && slots[t].cache == slots[t - 1].cache &&
                         slots[t].pos == slots[t - 1].pos + 1;
    if (extends) {
      ++last->count;
    } else {
      out[n_tiles++] = QueryTile{static_cast<std::int32_t>(t), 1};
    }
  }
  return n_tiles;
}

bool prefill_attention_supported(const AttentionGeometry& g) {
  if (g.n_kv_heads <= 0 || g.n_heads % g.n_kv_heads != 0) return false;
  if (g.softcap > 0) return false;  // soft-capped scores (Gemma 2): launch_attention
  const std::int64_t group = g.n_heads / g.n_kv_heads;
  return (g.head_dim == 64 || g.head_dim == 128) && group >= 1 && group <= kPrefillRows;
}

std::int64_t prefill_tile_tokens(const AttentionGeometry& g) {
  return kPrefillRows / std::max<std::int64_t>(1, g.n_heads / std::max<std::int64_t>(1, g.n_kv_heads));
}

void launch_prefill_attention(const float* q, const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles,
                              const AttentionGeometry& g, int layer, float* out, cudaStream_t stream) {
  if (n_tiles <= 0) return;
  if (!prefill_attention_supported(g)) {
    throw RuntimeError("CUDA prefill attention: unsupported geometry (" + std::to_string(g.n_heads) + " heads, " +
                       std::to_string(g.n_kv_heads) + " kv heads, head_dim " + std::to_string(g.head_dim) + ")");
  }
  if (g.head_dim == 64) {
    launch_hd<64>(q, slots, tiles, n_tiles, g, layer, out, stream);
  } else {
    launch_hd<128>(q, slots, tiles, n_tiles, g, layer, out, stream);
  }
}

}  // namespace plexus::cuda
