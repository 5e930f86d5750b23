// Causal prefill attention on tensor cores (flash-attention 2 style). A block of 4 warps owns the
// same R = 64 query rows as the f32 kernel (the group's heads of up to 64 / group consecutive
// tokens, row r = token r / group, head r % group) and walks the keys they attend, 64 at a time.
// q (· scale · log2 e) and each key/value tile are converted from f32 to bf16 on their way into
// shared memory (values transposed, dims × keys, so the P·V operand is read as key pairs). Each
// warp owns 16 rows: S = Q·Kᵀ with mma.sync m16n8k16 (bf16 in, f32 accumulate) stays in
// registers, the online softmax runs in f32 on the accumulator fragment (a quad of lanes shares a
// row), P is packed to bf16 straight from that fragment as the A operand of O += P·V (the m16n8
// accumulator layout equals the m16n8k16 A layout two key-octets at a time), and O stays in
// registers until the end. Causal mask and sliding window per row; tiles a warp's rows do not
// attend are skipped by that warp. Blocks run the tiles with the most keys first.
// Expected on an H100/H200 for 2048 tokens, 32/8 heads of 128: ~0.2-0.3 ms (L2 reads of the f32
// keys/values, ~1 GB per layer, and mma.sync issue are the limits; 3 blocks of 4 warps per SM).
//
// The staged variant (the default for CudaOps; PLEXUS_CUDA_PREFILL_ATTENTION=bf16-inloop picks the
// kernel above): prefill_kv_bf16_kernel converts, once per layer call, the keys and values the
// batch's tiles attend (per run of one sequence's tiles, positions [first attended, last] in
// 64-key chunks) into bf16 scratch, keys (kv head, key, dim) and values transposed (kv head, dim,
// key), zeros past the last position. prefill_attention_st_kernel then runs the same math as
// above on 64-key tiles that cp.async (sm_80+) copies 16 bytes at a time straight into the same
// shared-memory layouts, two stages: tile t + 1 loads while tile t is multiplied. 87 KB of shared
// memory per block (head_dim 128): 2 blocks of 4 warps per SM on H100/H200 (1 on A100).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/prefill_attention.h"
#include "kernels/cuda/token_slot.h"

namespace plexus::cuda {

namespace {

constexpr int kWarpsTc = 4;
constexpr int kThreadsTc = kWarpsTc * 32;
constexpr int kRowsTc = static_cast<int>(kPrefillRows);  // 64 = 16 rows per warp
constexpr int kKeysTc = 64;                               // keys per tile
static_assert(kRowsTc == 16 * kWarpsTc, "a warp owns 16 query rows");
static_assert((kKeysTc / 2) * (64 / 4) % kThreadsTc == 0, "whole load rounds");

template <int HD>
struct SmemTc {
  static constexpr int kLdq = HD + 8;         // bf16 per row of q and k: 32-bit fragment loads conflict-free
  static constexpr int kLdv = kKeysTc + 8;    // bf16 per row of vᵀ (a dim's keys)
  static constexpr int q = 0;                 // (kRowsTc, kLdq)
  static constexpr int k = q + kRowsTc * kLdq;  // (kKeysTc, kLdq)
  static constexpr int v = k + kKeysTc * kLdq;  // (HD, kLdv)
  static constexpr int elems = v + HD * kLdv;
  static constexpr std::size_t bytes = static_cast<std::size_t>(elems) * sizeof(__nv_bfloat16);
};

__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo (lower 16 bits)
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// c += a · b: a 16×16 (row), b 16×8 (col), bf16; c 16×8 f32.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

template <int HD>
__global__ void __launch_bounds__(kThreadsTc, 3)
prefill_attention_tc_kernel(const float* __restrict__ q,             // (n, n_heads, HD)
                            const TokenSlot* __restrict__ slots,     // (n)
                            const QueryTile* __restrict__ tiles,     // (n_tiles)
                            int n_tiles, int n_heads, int n_kv, int group, int window, float qscale, int layer,
                            float* __restrict__ out) {               // (n, n_heads, HD)
  using S = SmemTc<HD>;
  extern __shared__ __align__(16) __nv_bfloat16 smem_tc[];
  __nv_bfloat16* qs = smem_tc + S::q;
  __nv_bfloat16* ks = smem_tc + S::k;
  __nv_bfloat16* vs = smem_tc + S::v;

  // A 1-D grid, kv heads fastest, tiles from the last: later tiles attend more keys and start
  // first (for every kv head), the short ones fill in at the end.
  const int kvh = static_cast<int>(blockIdx.x % static_cast<unsigned>(n_kv));
  const QueryTile tile = tiles[n_tiles - 1 - static_cast<int>(blockIdx.x / static_cast<unsigned>(n_kv))];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gr = lane >> 2, tq = lane & 3;  // fragment row group, thread in quad
  const TokenSlot slot = slots[tile.first];
  const int p0 = slot.pos;
  const int rows = tile.count * group;

  const std::int64_t local = layer - slot.first_layer;
  const std::int64_t head_stride = slot.capacity * HD;
  const float* keys = slot.cache + ((local * 2 + 0) * n_kv + kvh) * head_stride;    // (capacity, HD)
  const float* values = slot.cache + ((local * 2 + 1) * n_kv + kvh) * head_stride;  // (capacity, HD)

  // Stage q · qscale as bf16; rows past the tile are zero.
  for (int e = tid; e < kRowsTc * (HD / 4); e += kThreadsTc) {
    const int r = e / (HD / 4), d = (e % (HD / 4)) * 4;
    float4 v4 = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < rows) {
      const int i = r / group, h = r % group;
      v4 = *reinterpret_cast<const float4*>(
          q + ((static_cast<std::int64_t>(tile.first) + i) * n_heads + static_cast<std::int64_t>(kvh) * group + h) *
                  HD +
          d);
    }
    uint2 w;
    w.x = pack_bf16(v4.x * qscale, v4.y * qscale);
    w.y = pack_bf16(v4.z * qscale, v4.w * qscale);
    *reinterpret_cast<uint2*>(qs + r * S::kLdq + d) = w;
  }

  // This thread's two rows (fragment rows gr and gr + 8 of the warp's 16): positions attended.
  const int r_lo = warp * 16 + gr, r_hi = r_lo + 8;
  const int pos_lo = p0 + r_lo / group, pos_hi = p0 + r_hi / group;
  const int first_lo = window > 0 ? max(0, pos_lo - window + 1) : 0;
  const int first_hi = window > 0 ? max(0, pos_hi - window + 1) : 0;
  // The warp's range: rows warp·16 .. warp·16+15 (padding rows past `rows` attend like real ones;
  // their output is dropped).
  const int wpos_min = p0 + (warp * 16) / group, wpos_max = p0 + (warp * 16 + 15) / group;
  const int wfirst_min = window > 0 ? max(0, wpos_min - window + 1) : 0;
  const int wfirst_max = window > 0 ? max(0, wpos_max - window + 1) : 0;

  constexpr int kNt = HD / 8;  // output n-tiles (8 dims each)
  float o[kNt][4];
#pragma unroll
  for (int i = 0; i < kNt; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.f, l_hi = 0.f;  // l: this thread's part of the row sum

  const int last = p0 + tile.count - 1;  // the last key any row attends
  const int begin = window > 0 ? max(0, p0 - window + 1) : 0;

  for (int k0 = begin; k0 <= last; k0 += kKeysTc) {
    __syncthreads();  // q staged / the previous tile's k, v no longer read
    // Keys: (key, dim) rows, bf16. Keys past `last` are zero.
    // (Fixed trip counts, unrolled by 8 / 4: that many loads per thread in flight at once.)
#pragma unroll 8
    for (int it = 0; it < kKeysTc * (HD / 4) / kThreadsTc; ++it) {
      const int e = tid + it * kThreadsTc;
      const int j = e / (HD / 4), d = (e % (HD / 4)) * 4;
      float4 k4 = make_float4(0.f, 0.f, 0.f, 0.f);
      if (k0 + j <= last) k4 = *reinterpret_cast<const float4*>(keys + static_cast<std::int64_t>(k0 + j) * HD + d);
      uint2 w;
      w.x = pack_bf16(k4.x, k4.y);
      w.y = pack_bf16(k4.z, k4.w);
      *reinterpret_cast<uint2*>(ks + j * S::kLdq + d) = w;
    }
    // Values transposed: (dim, key) rows; a thread converts a key pair × 4 dims. A warp covers
    // 8 key pairs × 4 dim groups (64-byte runs of a key's row).
#pragma unroll 4
    for (int it = 0; it < (kKeysTc / 2) * (HD / 4) / kThreadsTc; ++it) {
      const int e = tid + it * kThreadsTc;
      const int jp = (e & 7) | (((e >> 5) & 3) << 3);
      const int d = (((e >> 3) & 3) | ((e >> 7) << 2)) * 4;
      const int j = jp * 2;
      float4 a = make_float4(0.f, 0.f, 0.f, 0.f), b = a;
      if (k0 + j <= last) a = *reinterpret_cast<const float4*>(values + static_cast<std::int64_t>(k0 + j) * HD + d);
      if (k0 + j + 1 <= last) {
        b = *reinterpret_cast<const float4*>(values + static_cast<std::int64_t>(k0 + j + 1) * HD + d);
      }
      *reinterpret_cast<std::uint32_t*>(vs + (d + 0) * S::kLdv + j) = pack_bf16(a.x, b.x);
      *reinterpret_cast<std::uint32_t*>(vs + (d + 1) * S::kLdv + j) = pack_bf16(a.y, b.y);
      *reinterpret_cast<std::uint32_t*>(vs + (d + 2) * S::kLdv + j) = pack_bf16(a.z, b.z);
      *reinterpret_cast<std::uint32_t*>(vs + (d + 3) * S::kLdv + j) = pack_bf16(a.w, b.w);
    }
    __syncthreads();

    // A warp whose rows attend none of these keys skips the tile (warp-uniform).
    if (k0 > wpos_max || k0 + kKeysTc - 1 < wfirst_min) continue;

    // S = Q·Kᵀ for the warp's 16 rows × 64 keys: 8 n-tiles of 8 keys.
    float s[kKeysTc / 8][4];
#pragma unroll
    for (int n = 0; n < kKeysTc / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
    const __nv_bfloat16* qw = qs + (warp * 16) * S::kLdq;
#pragma unroll
    for (int kc = 0; kc < HD / 16; ++kc) {
      std::uint32_t a[4];
      a[0] = *reinterpret_cast<const std::uint32_t*>(qw + gr * S::kLdq + kc * 16 + tq * 2);
      a[1] = *reinterpret_cast<const std::uint32_t*>(qw + (gr + 8) * S::kLdq + kc * 16 + tq * 2);
      a[2] = *reinterpret_cast<const std::uint32_t*>(qw + gr * S::kLdq + kc * 16 + 8 + tq * 2);
      a[3] = *reinterpret_cast<const std::uint32_t*>(qw + (gr + 8) * S::kLdq + kc * 16 + 8 + tq * 2);
#pragma unroll
      for (int n = 0; n < kKeysTc / 8; ++n) {
        const __nv_bfloat16* kr = ks + (n * 8 + gr) * S::kLdq + kc * 16 + tq * 2;
        mma_bf16(s[n], a, *reinterpret_cast<const std::uint32_t*>(kr), *reinterpret_cast<const std::uint32_t*>(kr + 8));
      }
    }

    // Mask where some row of the warp misses some key of the tile (warp-uniform test).
    const bool full = k0 + kKeysTc - 1 <= wpos_min && k0 >= wfirst_max;
    if (!full) {
#pragma unroll
      for (int n = 0; n < kKeysTc / 8; ++n) {
#pragma unroll
        for (int b = 0; b < 2; ++b) {
          const int kp = k0 + n * 8 + tq * 2 + b;
          if (kp > pos_lo || kp < first_lo) s[n][b] = -INFINITY;
          if (kp > pos_hi || kp < first_hi) s[n][2 + b] = -INFINITY;
        }
      }
    }

    // Online softmax (base 2: q carries log2 e). A quad of lanes holds a row.
    float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
    for (int n = 0; n < kKeysTc / 8; ++n) {
      mx_lo = fmaxf(mx_lo, fmaxf(s[n][0], s[n][1]));
      mx_hi = fmaxf(mx_hi, fmaxf(s[n][2], s[n][3]));
    }
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
    const float mn_lo = fmaxf(m_lo, mx_lo), mn_hi = fmaxf(m_hi, mx_hi);
    // A row with no key in range yet subtracts 0: its exponentials are exp2(-inf) = 0.
    const float base_lo = mn_lo == -INFINITY ? 0.f : mn_lo;
    const float base_hi = mn_hi == -INFINITY ? 0.f : mn_hi;
    const float c_lo = exp2f(m_lo - base_lo), c_hi = exp2f(m_hi - base_hi);
    m_lo = mn_lo;
    m_hi = mn_hi;
    float sum_lo = 0.f, sum_hi = 0.f;
#pragma unroll
    for (int n = 0; n < kKeysTc / 8; ++n) {
      s[n][0] = exp2f(s[n][0] - base_lo);
      s[n][1] = exp2f(s[n][1] - base_lo);
      s[n][2] = exp2f(s[n][2] - base_hi);
      s[n][3] = exp2f(s[n][3] - base_hi);
      sum_lo += s[n][0] + s[n][1];
      sum_hi += s[n][2] + s[n][3];
    }
    l_lo = l_lo * c_lo + sum_lo;
    l_hi = l_hi * c_hi + sum_hi;
#pragma unroll
    for (int i = 0; i < kNt; ++i) {
      o[i][0] *= c_lo;
      o[i][1] *= c_lo;
      o[i][2] *= c_hi;
      o[i][3] *= c_hi;
    }

    // O += P·V: key chunks of 16; P's A fragment is the accumulator of n-tiles 2kc, 2kc+1.
#pragma unroll
    for (int kc = 0; kc < kKeysTc / 16; ++kc) {
      std::uint32_t a[4];
      a[0] = pack_bf16(s[2 * kc][0], s[2 * kc][1]);
      a[1] = pack_bf16(s[2 * kc][2], s[2 * kc][3]);
      a[2] = pack_bf16(s[2 * kc + 1][0], s[2 * kc + 1][1]);
      a[3] = pack_bf16(s[2 * kc + 1][2], s[2 * kc + 1][3]);
#pragma unroll
      for (int i = 0; i < kNt; ++i) {
        const __nv_bfloat16* vr = vs + (i * 8 + gr) * S::kLdv + kc * 16 + tq * 2;
        mma_bf16(o[i], a, *reinterpret_cast<const std::uint32_t*>(vr), *reinterpret_cast<const std::uint32_t*>(vr + 8));
      }
    }
  }

  // Row sums across the quad, then out = O / l.
  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half == 0 ? r_lo : r_hi;
    if (r >= rows) continue;
    const float inv = 1.0f / (half == 0 ? l_lo : l_hi);
    const int t = r / group, h = r % group;
    float* orow = out + ((static_cast<std::int64_t>(tile.first) + t) * n_heads + static_cast<std::int64_t>(kvh) * group + h) * HD;
#pragma unroll
    for (int i = 0; i < kNt; ++i) {
      *reinterpret_cast<float2*>(orow + i * 8 + tq * 2) = make_float2(o[i][2 * half] * inv, o[i][2 * half + 1] * inv);
    }
  }
}

template <int HD>
void launch_tc_hd(const float* q, const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles,
                  const AttentionGeometry& g, int layer, float* out, cudaStream_t stream) {
  auto kernel = prefill_attention_tc_kernel<HD>;
  PLEXUS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(SmemTc<HD>::bytes)),
                    "prefill attention (bf16): allowing " + std::to_string(SmemTc<HD>::bytes) +
                        " bytes of shared memory");
  const dim3 grid(static_cast<unsigned>(n_tiles * g.n_kv_heads));
  const float log2e = 1.4426950408889634f;
  // Windows longer than any int position mean the whole context.
  const int window = g.window > 0 && g.window < (std::int64_t{1} << 30) ? static_cast<int>(g.window) : 0;
  kernel<<<grid, kThreadsTc, SmemTc<HD>::bytes, stream>>>(
      q, slots, tiles, static_cast<int>(n_tiles), static_cast<int>(g.n_heads), static_cast<int>(g.n_kv_heads),
      static_cast<int>(g.n_heads / g.n_kv_heads), window, g.scale * log2e, layer, out);
}


// ---- The staged path: keys/values converted to bf16 once per layer call, then streamed. ----

constexpr int kConvThreads = 128;

__device__ __forceinline__ int span_begin(int first_pos, int window) {
  return window > 0 ? (max(0, first_pos - window + 1) / kKeysTc) * kKeysTc : 0;
}

// Block (chunk of 64 keys of the buffer, kv head): finds the chunk's span, converts its keys
// (rows of HD) and values (transposed through shared memory: rows of 64 keys per dim). Keys past
// the span's last position are written as zeros; chunks before the window's first are skipped.
template <int HD>
__global__ void __launch_bounds__(kConvThreads)
prefill_kv_bf16_kernel(const TokenSlot* __restrict__ slots, const KvSpan* __restrict__ spans, int n_spans,
                       int n_kv, int window, int layer, __nv_bfloat16* __restrict__ kv, std::int64_t cap) {
  __shared__ __align__(16) __nv_bfloat16 vt[HD][kKeysTc + 2];
  const int kvh = static_cast<int>(blockIdx.y);
  const int base = static_cast<int>(blockIdx.x) * kKeysTc;  // buffer key
  int lo = 0, hi = n_spans - 1;  // the last span with offset <= base
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (spans[mid].offset <= base) lo = mid; else hi = mid - 1;
  }
  const KvSpan sp = spans[lo];
  const int p0 = base - sp.offset;  // position of the chunk's first key
  if (p0 + kKeysTc <= span_begin(sp.first_pos, window)) return;
  const int last = sp.last_pos;
  const TokenSlot slot = slots[sp.token];
  const std::int64_t local = layer - slot.first_layer;
  const std::int64_t head_stride = slot.capacity * HD;
  const float* keys = slot.cache + ((local * 2 + 0) * n_kv + kvh) * head_stride;
  const float* values = slot.cache + ((local * 2 + 1) * n_kv + kvh) * head_stride;
  __nv_bfloat16* kb = kv + (static_cast<std::int64_t>(kvh) * cap + base) * HD;
  __nv_bfloat16* vb = kv + static_cast<std::int64_t>(n_kv) * cap * HD + static_cast<std::int64_t>(kvh) * HD * cap + base;
  for (int e = threadIdx.x; e < kKeysTc * (HD / 4); e += kConvThreads) {
    const int j = e / (HD / 4), d = (e % (HD / 4)) * 4;
    const int p = p0 + j;
    float4 k4 = make_float4(0.f, 0.f, 0.f, 0.f), v4 = k4;
    if (p <= last) {
      k4 = *reinterpret_cast<const float4*>(keys + static_cast<std::int64_t>(p) * HD + d);
      v4 = *reinterpret_cast<const float4*>(values + static_cast<std::int64_t>(p) * HD + d);
    }
    uint2 w;
    w.x = pack_bf16(k4.x, k4.y);
    w.y = pack_bf16(k4.z, k4.w);
    *reinterpret_cast<uint2*>(kb + static_cast<std::int64_t>(j) * HD + d) = w;
    vt[d + 0][j] = __float2bfloat16_rn(v4.x);
    vt[d + 1][j] = __float2bfloat16_rn(v4.y);
    vt[d + 2][j] = __float2bfloat16_rn(v4.z);
    vt[d + 3][j] = __float2bfloat16_rn(v4.w);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < HD * (kKeysTc / 2); e += kConvThreads) {
    const int d = e / (kKeysTc / 2), jp = e % (kKeysTc / 2);
    *reinterpret_cast<std::uint32_t*>(vb + static_cast<std::int64_t>(d) * cap + 2 * jp) =
        *reinterpret_cast<const std::uint32_t*>(&vt[d][2 * jp]);
  }
}

template <int HD>
struct SmemSt {
  static constexpr int kLdq = HD + 8;       // as SmemTc
  static constexpr int kLdv = kKeysTc + 8;
  static constexpr int kTile = kKeysTc * kLdq;  // one key tile
  static constexpr int vTile = HD * kLdv;        // one value tile
  static constexpr int q = 0;
  static constexpr int k = q + kRowsTc * kLdq;  // 2 key tiles
  static constexpr int v = k + 2 * kTile;       // 2 value tiles
  static constexpr int elems = v + 2 * vTile;
  static constexpr std::size_t bytes = static_cast<std::size_t>(elems) * sizeof(__nv_bfloat16);
};

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cp_async_wait1() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
#endif
}

// prefill_attention_tc_kernel's math on bf16 tiles loaded with cp.async, two stages: tile t + 1
// is in flight while tile t is multiplied. Key tiles start at multiples of 64 (a window's first
// tile rounded down; the mask covers the extra keys).
template <int HD>
__global__ void __launch_bounds__(kThreadsTc, 2)
prefill_attention_st_kernel(const float* __restrict__ q,             // (n, n_heads, HD)
                            const TokenSlot* __restrict__ slots,     // (n)
                            const QueryTile* __restrict__ tiles,     // (n_tiles)
                            const std::int32_t* __restrict__ tile_offset,  // (n_tiles)
                            int n_tiles, int n_heads, int n_kv, int group, int window, float qscale,
                            const __nv_bfloat16* __restrict__ kv, std::int64_t cap,
                            float* __restrict__ out) {               // (n, n_heads, HD)
  using S = SmemSt<HD>;
  extern __shared__ __align__(16) __nv_bfloat16 smem_st[];
  __nv_bfloat16* qs = smem_st + S::q;

  const int kvh = static_cast<int>(blockIdx.x % static_cast<unsigned>(n_kv));
  const int ti = n_tiles - 1 - static_cast<int>(blockIdx.x / static_cast<unsigned>(n_kv));
  const QueryTile tile = tiles[ti];
  const std::int64_t off = tile_offset[ti];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gr = lane >> 2, tq = lane & 3;
  const int p0 = slots[tile.first].pos;
  const int rows = tile.count * group;

  const __nv_bfloat16* kg = kv + (static_cast<std::int64_t>(kvh) * cap + off) * HD;  // position p: kg + p·HD
  const __nv_bfloat16* vg =
      kv + static_cast<std::int64_t>(n_kv) * cap * HD + static_cast<std::int64_t>(kvh) * HD * cap + off;  // (d, p): vg + d·cap + p

  const int last = p0 + tile.count - 1;
  const int begin = span_begin(p0, window);
  const int n_iter = (last - begin) / kKeysTc + 1;

  auto load = [&](int k0, int buf) {
    __nv_bfloat16* kd = smem_st + S::k + buf * S::kTile;
    __nv_bfloat16* vd = smem_st + S::v + buf * S::vTile;
#pragma unroll
    for (int it = 0; it < kKeysTc * (HD / 8) / kThreadsTc; ++it) {
      const int c = tid + it * kThreadsTc;
      const int j = c / (HD / 8), d = (c % (HD / 8)) * 8;
      cp_async16(kd + j * S::kLdq + d, kg + static_cast<std::int64_t>(k0 + j) * HD + d);
    }
#pragma unroll
    for (int it = 0; it < HD * (kKeysTc / 8) / kThreadsTc; ++it) {
      const int c = tid + it * kThreadsTc;
      const int d = c / (kKeysTc / 8), j = (c % (kKeysTc / 8)) * 8;
      cp_async16(vd + d * S::kLdv + j, vg + static_cast<std::int64_t>(d) * cap + k0 + j);
    }
  };
  load(begin, 0);
  cp_async_commit();

  // Stage q · qscale as bf16; rows past the tile are zero.
  for (int e = tid; e < kRowsTc * (HD / 4); e += kThreadsTc) {
    const int r = e / (HD / 4), d = (e % (HD / 4)) * 4;
    float4 v4 = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < rows) {
      const int i = r / group, h = r % group;
      v4 = *reinterpret_cast<const float4*>(
          q + ((static_cast<std::int64_t>(tile.first) + i) * n_heads + static_cast<std::int64_t>(kvh) * group + h) *
                  HD +
          d);
    }
    uint2 w;
    w.x = pack_bf16(v4.x * qscale, v4.y * qscale);
    w.y = pack_bf16(v4.z * qscale, v4.w * qscale);
    *reinterpret_cast<uint2*>(qs + r * S::kLdq + d) = w;
  }

  const int r_lo = warp * 16 + gr, r_hi = r_lo + 8;
  const int pos_lo = p0 + r_lo / group, pos_hi = p0 + r_hi / group;
  const int first_lo = window > 0 ? max(0, pos_lo - window + 1) : 0;
  const int first_hi = window > 0 ? max(0, pos_hi - window + 1) : 0;
  const int wpos_min = p0 + (warp * 16) / group, wpos_max = p0 + (warp * 16 + 15) / group;
  const int wfirst_min = window > 0 ? max(0, wpos_min - window + 1) : 0;
  const int wfirst_max = window > 0 ? max(0, wpos_max - window + 1) : 0;

  constexpr int kNt = HD / 8;
  float o[kNt][4];
#pragma unroll
  for (int i = 0; i < kNt; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.f, l_hi = 0.f;

  for (int it = 0; it < n_iter; ++it) {
    const int k0 = begin + it * kKeysTc;
    if (it + 1 < n_iter) load(k0 + kKeysTc, (it + 1) & 1);
    cp_async_commit();  // (an empty group on the last tile keeps the count)
    cp_async_wait1();   // this thread's copies of tile `it` landed
    __syncthreads();    // everyone's (and q's)
    const __nv_bfloat16* ks = smem_st + S::k + (it & 1) * S::kTile;
    const __nv_bfloat16* vs = smem_st + S::v + (it & 1) * S::vTile;

    if (!(k0 > wpos_max || k0 + kKeysTc - 1 < wfirst_min)) {
      float s[kKeysTc / 8][4];
#pragma unroll
      for (int n = 0; n < kKeysTc / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
      const __nv_bfloat16* qw = qs + (warp * 16) * S::kLdq;
#pragma unroll
      for (int kc = 0; kc < HD / 16; ++kc) {
        std::uint32_t a[4];
        a[0] = *reinterpret_cast<const std::uint32_t*>(qw + gr * S::kLdq + kc * 16 + tq * 2);
        a[1] = *reinterpret_cast<const std::uint32_t*>(qw + (gr + 8) * S::kLdq + kc * 16 + tq * 2);
        a[2] = *reinterpret_cast<const std::uint32_t*>(qw + gr * S::kLdq + kc * 16 + 8 + tq * 2);
        a[3] = *reinterpret_cast<const std::uint32_t*>(qw + (gr + 8) * S::kLdq + kc * 16 + 8 + tq * 2);
#pragma unroll
        for (int n = 0; n < kKeysTc / 8; ++n) {
          const __nv_bfloat16* kr = ks + (n * 8 + gr) * S::kLdq + kc * 16 + tq * 2;
          mma_bf16(s[n], a, *reinterpret_cast<const std::uint32_t*>(kr), *reinterpret_cast<const std::uint32_t*>(kr + 8));
        }
      }

      const bool full = k0 + kKeysTc - 1 <= wpos_min && k0 >= wfirst_max;
      if (!full) {
#pragma unroll
        for (int n = 0; n < kKeysTc / 8; ++n) {
#pragma unroll
          for (int b = 0; b < 2; ++b) {
            const int kp = k0 + n * 8 + tq * 2 + b;
            if (kp > pos_lo || kp < first_lo) s[n][b] = -INFINITY;
            if (kp > pos_hi || kp < first_hi) s[n][2 + b] = -INFINITY;
          }
        }
      }

      float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
      for (int n = 0; n < kKeysTc / 8; ++n) {
        mx_lo = fmaxf(mx_lo, fmaxf(s[n][0], s[n][1]));
        mx_hi = fmaxf(mx_hi, fmaxf(s[n][2], s[n][3]));
      }
      mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
      mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
      mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
      mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
      const float mn_lo = fmaxf(m_lo, mx_lo), mn_hi = fmaxf(m_hi, mx_hi);
      const float base_lo = mn_lo == -INFINITY ? 0.f : mn_lo;
      const float base_hi = mn_hi == -INFINITY ? 0.f : mn_hi;
      const float c_lo = exp2f(m_lo - base_lo), c_hi = exp2f(m_hi - base_hi);
      m_lo = mn_lo;
      m_hi = mn_hi;
      float sum_lo = 0.f, sum_hi = 0.f;
#pragma unroll
      for (int n = 0; n < kKeysTc / 8; ++n) {
        s[n][0] = exp2f(s[n][0] - base_lo);
        s[n][1] = exp2f(s[n][1] - base_lo);
        s[n][2] = exp2f(s[n][2] - base_hi);
        s[n][3] = exp2f(s[n][3] - base_hi);
        sum_lo += s[n][0] + s[n][1];
        sum_hi += s[n][2] + s[n][3];
      }
      l_lo = l_lo * c_lo + sum_lo;
      l_hi = l_hi * c_hi + sum_hi;
#pragma unroll
      for (int i = 0; i < kNt; ++i) {
        o[i][0] *= c_lo;
        o[i][1] *= c_lo;
        o[i][2] *= c_hi;
        o[i][3] *= c_hi;
      }
#pragma unroll
      for (int kc = 0; kc < kKeysTc / 16; ++kc) {
        std::uint32_t a[4];
        a[0] = pack_bf16(s[2 * kc][0], s[2 * kc][1]);
        a[1] = pack_bf16(s[2 * kc][2], s[2 * kc][3]);
        a[2] = pack_bf16(s[2 * kc + 1][0], s[2 * kc + 1][1]);
        a[3] = pack_bf16(s[2 * kc + 1][2], s[2 * kc + 1][3]);
#pragma unroll
        for (int i = 0; i < kNt; ++i) {
          const __nv_bfloat16* vr = vs + (i * 8 + gr) * S::kLdv + kc * 16 + tq * 2;
          mma_bf16(o[i], a, *reinterpret_cast<const std::uint32_t*>(vr), *reinterpret_cast<const std::uint32_t*>(vr + 8));
        }
      }
    }
    __syncthreads();  // tile `it`'s buffer is free for tile it + 2
  }

  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half == 0 ? r_lo : r_hi;
    if (r >= rows) continue;
    const float inv = 1.0f / (half == 0 ? l_lo : l_hi);
    const int t = r / group, h = r % group;
    float* orow = out + ((static_cast<std::int64_t>(tile.first) + t) * n_heads + static_cast<std::int64_t>(kvh) * group + h) * HD;
#pragma unroll
    for (int i = 0; i < kNt; ++i) {
      *reinterpret_cast<float2*>(orow + i * 8 + tq * 2) = make_float2(o[i][2 * half] * inv, o[i][2 * half + 1] * inv);
    }
  }
}

int window_of(const AttentionGeometry& g) {
  return g.window > 0 && g.window < (std::int64_t{1} << 30) ? static_cast<int>(g.window) : 0;
}

template <int HD>
void launch_st_hd(const float* q, const TokenSlot* slots, const QueryTile* tiles, const std::int32_t* tile_offset,
                  std::int64_t n_tiles, const AttentionGeometry& g, const void* kv, std::int64_t cap, float* out,
                  cudaStream_t stream) {
  auto kernel = prefill_attention_st_kernel<HD>;
  PLEXUS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(SmemSt<HD>::bytes)),
                    "prefill attention (bf16, staged): allowing " + std::to_string(SmemSt<HD>::bytes) +
                        " bytes of shared memory");
  const dim3 grid(static_cast<unsigned>(n_tiles * g.n_kv_heads));
  const float log2e = 1.4426950408889634f;
  kernel<<<grid, kThreadsTc, SmemSt<HD>::bytes, stream>>>(
      q, slots, tiles, tile_offset, static_cast<int>(n_tiles), static_cast<int>(g.n_heads),
      static_cast<int>(g.n_kv_heads), static_cast<int>(g.n_heads / g.n_kv_heads), window_of(g), g.scale * log2e,
      static_cast<const __nv_bfloat16*>(kv), cap, out);
}
}  // namespace

void launch_prefill_attention_bf16(const float* q, const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles,
                                   const AttentionGeometry& g, int layer, float* out, cudaStream_t stream) {
  if (n_tiles <= 0) return;
  if (!prefill_attention_supported(g)) {
    throw RuntimeError("CUDA prefill attention (bf16): unsupported geometry (" + std::to_string(g.n_heads) +
                       " heads, " + std::to_string(g.n_kv_heads) + " kv heads, head_dim " +
                       std::to_string(g.head_dim) + ")");
  }
  if (g.head_dim == 64) {
    launch_tc_hd<64>(q, slots, tiles, n_tiles, g, layer, out, stream);
  } else {
    launch_tc_hd<128>(q, slots, tiles, n_tiles, g, layer, out, stream);
  }
}

std::int64_t make_kv_spans(const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles, KvSpan* spans,
                           std::int32_t* tile_offset, std::int64_t* n_spans) {
  std::int64_t ns = 0, keys = 0;
  auto close_span = [&] {
    if (ns > 0) keys += (static_cast<std::int64_t>(spans[ns - 1].last_pos) + kKvSpanAlign) / kKvSpanAlign * kKvSpanAlign;
  };
  for (std::int64_t i = 0; i < n_tiles; ++i) {
    const QueryTile& t = tiles[i];
    const TokenSlot& first = slots[t.first];
    const std::int32_t last_pos = first.pos + t.count - 1;
    const bool extends = ns > 0 && slots[spans[ns - 1].token].cache == first.cache &&
                         first.pos == spans[ns - 1].last_pos + 1;
    if (extends) {
      spans[ns - 1].last_pos = last_pos;
    } else {
      close_span();
      // Offsets past int32 are refused by the caller's capacity check (keys is returned whole).
      spans[ns++] = KvSpan{t.first, first.pos, last_pos, static_cast<std::int32_t>(std::min<std::int64_t>(keys, INT32_MAX / 2))};
    }
    tile_offset[i] = spans[ns - 1].offset;
  }
  close_span();
  *n_spans = ns;
  return keys;
}

std::size_t prefill_kv_bf16_bytes(const AttentionGeometry& g, std::int64_t keys) {
  return static_cast<std::size_t>(keys) * static_cast<std::size_t>(g.n_kv_heads * g.head_dim) * 2 * sizeof(__nv_bfloat16);
}

void launch_prefill_kv_bf16(const TokenSlot* slots, const KvSpan* spans, std::int64_t n_spans, std::int64_t needed_keys,
                            const AttentionGeometry& g, int layer, void* kv, std::int64_t key_capacity,
                            cudaStream_t stream) {
  if (n_spans <= 0 || needed_keys <= 0) return;
  if (!prefill_attention_supported(g) || needed_keys > key_capacity || key_capacity % kKvSpanAlign != 0 ||
      needed_keys % kKvSpanAlign != 0 || key_capacity > (std::int64_t{1} << 30)) {
    throw RuntimeError("CUDA prefill attention (bf16, staged): " + std::to_string(needed_keys) +
                       " keys for a buffer of " + std::to_string(key_capacity) + ", head_dim " +
                       std::to_string(g.head_dim));
  }
  const dim3 grid(static_cast<unsigned>(needed_keys / kKvSpanAlign), static_cast<unsigned>(g.n_kv_heads));
  auto* kvb = static_cast<__nv_bfloat16*>(kv);
  if (g.head_dim == 64) {
    prefill_kv_bf16_kernel<64><<<grid, kConvThreads, 0, stream>>>(slots, spans, static_cast<int>(n_spans),
                                                                   static_cast<int>(g.n_kv_heads), window_of(g), layer,
                                                                   kvb, key_capacity);
  } else {
    prefill_kv_bf16_kernel<128><<<grid, kConvThreads, 0, stream>>>(slots, spans, static_cast<int>(n_spans),
                                                                    static_cast<int>(g.n_kv_heads), window_of(g),
                                                                    layer, kvb, key_capacity);
  }
}

void launch_prefill_attention_bf16_staged(const float* q, const TokenSlot* slots, const QueryTile* tiles,
                                          const std::int32_t* tile_offset, std::int64_t n_tiles,
                                          const AttentionGeometry& g, const void* kv, std::int64_t key_capacity,
                                          float* out, cudaStream_t stream) {
  if (n_tiles <= 0) return;
  if (!prefill_attention_supported(g)) {
    throw RuntimeError("CUDA prefill attention (bf16, staged): unsupported geometry (" + std::to_string(g.n_heads) +
                       " heads, " + std::to_string(g.n_kv_heads) + " kv heads, head_dim " +
                       std::to_string(g.head_dim) + ")");
  }
  if (g.head_dim == 64) {
    launch_st_hd<64>(q, slots, tiles, tile_offset, n_tiles, g, kv, key_capacity, out, stream);
  } else {
    launch_st_hd<128>(q, slots, tiles, tile_offset, n_tiles, g, kv, key_capacity, out, stream);
  }
}

}  // namespace plexus::cuda
