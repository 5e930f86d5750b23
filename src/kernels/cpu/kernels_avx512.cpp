// AVX-512 (F/BW/VL/DQ) + FMA + F16C kernels. Compiled with those flags and only called after
// a CPUID + XGETBV check. Bitwise equal to the AVX2 and generic tables:
// - Dot products keep one 8-lane accumulator per (token, row). A zmm register holds two of them:
//   its low 256 bits accumulate token t against row r, its high 256 bits token t+1 against the
//   same row (8 weights broadcast to both halves, the two tokens' 8 activations side by side).
//   Each half is reduced in the shared order and finished with the same scalar tail.
// - Element-wise kernels run 16 lanes: every lane does the same operations as before.
// - Reductions over one vector (dot, sum_squares, the sum in exp_shift_sum) keep 8 lanes.
// Fewer than 4 tokens (decode, which streams weights and is bound by memory bandwidth, not by the
// FMA rate) and a leftover single token use the AVX2 table's tile.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/avx512_intrinsics.h"
#include "kernels/cpu/exp_poly.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant_kernels.h"
#include "kernels/ref/dequantize.h"

namespace plexus {
namespace {

inline float reduce8(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  const __m128 s4 = _mm_add_ps(lo, hi);                     // l0+l4, l1+l5, l2+l6, l3+l7
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
  const __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

// 8 weights at base[i..i+8) as f32, in both 256-bit halves.
template <DType T>
inline __m512 load8_twice(const void* base, std::int64_t i) {
  if constexpr (T == DType::kF32) {
    return _mm512_broadcast_f32x8(_mm256_loadu_ps(static_cast<const float*>(base) + i));
  } else {
    const __m256i h = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(base) + i)));
    if constexpr (T == DType::kBF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else return _mm512_cvtph_ps(h);
  }
}

template <DType T>
inline float load1(const void* base, std::int64_t i) {
  if constexpr (T == DType::kF32) return static_cast<const float*>(base)[i];
  else if constexpr (T == DType::kBF16) return bf16_to_f32(static_cast<const std::uint16_t*>(base)[i]);
  else return f16_to_f32(static_cast<const std::uint16_t*>(base)[i]);
}

// Tokens t and t+1's activations x[i..i+8): low half token t, high half token t+1.
inline __m512 load_token_pair(const float* x, std::int64_t ldx, std::int64_t i) {
  return _mm512_insertf32x8(_mm512_zextps256_ps512(_mm256_loadu_ps(x + i)), _mm256_loadu_ps(x + ldx + i), 1);
}

// Batched decode streams the weights once: the first token tile over a row range fetches the
// rows about this many bytes further on (at least one tile on) into L2, as the AVX2 decode tile.
constexpr std::int64_t kPrefetchBytes = 8192;

// 2·NP tokens × NR rows, register-blocked (NP·NR zmm accumulators). The loops over p and r
// must unroll completely so the accumulators live in registers. PF: prefetch ahead.
#define PLEXUS_UNROLL _Pragma("GCC unroll 16")
template <DType T, int NP, int NR, bool PF>
void tile(const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y, std::int64_t ldy,
          std::int64_t k) {
  constexpr std::int64_t es = T == DType::kF32 ? 4 : 2;
  const std::uint8_t* wb = static_cast<const std::uint8_t*>(w);
  __m512 acc[NP][NR];
  PLEXUS_UNROLL for (int p = 0; p < NP; ++p) {
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) acc[p][r] = _mm512_setzero_ps();
  }
  const std::int64_t row_bytes = ldw * es;
  const std::int64_t ahead = std::max<std::int64_t>(NR, (kPrefetchBytes + row_bytes - 1) / std::max<std::int64_t>(row_bytes, 1));
  std::int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    if constexpr (PF) {
      if (((i * es) & 63) == 0) {
        PLEXUS_UNROLL for (int r = 0; r < NR; ++r) {
          _mm_prefetch(reinterpret_cast<const char*>(wb + (r + ahead) * row_bytes + i * es), _MM_HINT_T1);
        }
      }
    }
    __m512 xv[NP];
    PLEXUS_UNROLL for (int p = 0; p < NP; ++p) xv[p] = load_token_pair(x + 2 * p * ldx, ldx, i);
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) {
      const __m512 wv = load8_twice<T>(wb + r * ldw * es, i);
      PLEXUS_UNROLL for (int p = 0; p < NP; ++p) acc[p][r] = _mm512_fmadd_ps(wv, xv[p], acc[p][r]);
    }
  }
  PLEXUS_UNROLL for (int p = 0; p < NP; ++p) {
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) {
      const __m256 halves[2] = {_mm512_castps512_ps256(acc[p][r]), _mm512_extractf32x8_ps(acc[p][r], 1)};
      for (int h = 0; h < 2; ++h) {
        const std::int64_t t = 2 * p + h;
        float s = reduce8(halves[h]);
        for (std::int64_t j = i; j < k; ++j) s = __builtin_fmaf(load1<T>(wb + r * ldw * es, j), x[t * ldx + j], s);
        y[t * ldy + r] = s;
      }
    }
  }
}

// The register tile for many tokens: kPairs token pairs × kRows rows (24 accumulators, 4 token
// pairs and 1 weight register). Measured on Zen 5 against 2×12, 3×8, 5×5, 6×4 and 8×3: 4×6 and
// 5×5 were fastest (about 1.6× the AVX2 tile per core).
constexpr int kPairs = 4;
constexpr int kRows = 6;

template <DType T, int NP, int NR, bool PF>
void tile_rest_rows(const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y,
                    std::int64_t ldy, std::int64_t nr, std::int64_t k) {
  if constexpr (NR > 0) {
    if (nr == NR) return tile<T, NP, NR, PF>(w, ldw, x, ldx, y, ldy, k);
    tile_rest_rows<T, NP, NR - 1, PF>(w, ldw, x, ldx, y, ldy, nr, k);
  }
}

// 2·NP tokens × any number of rows.
template <DType T, int NP, bool PF>
void tile_rows(const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y, std::int64_t ldy,
               std::int64_t nr, std::int64_t k) {
  constexpr std::int64_t es = T == DType::kF32 ? 4 : 2;
  const std::uint8_t* wb = static_cast<const std::uint8_t*>(w);
  std::int64_t r = 0;
  for (; r + kRows <= nr; r += kRows) tile<T, NP, kRows, PF>(wb + r * ldw * es, ldw, x, ldx, y + r, ldy, k);
  if (r < nr) tile_rest_rows<T, NP, kRows - 1, PF>(wb + r * ldw * es, ldw, x, ldx, y + r, ldy, nr - r, k);
}

template <DType T, int NP, bool PF>
void tile_rest_pairs(const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y,
                     std::int64_t ldy, std::int64_t np, std::int64_t nr, std::int64_t k) {
  if constexpr (NP > 0) {
    if (np == NP) return tile_rows<T, NP, PF>(w, ldw, x, ldx, y, ldy, nr, k);
    tile_rest_pairs<T, NP - 1, PF>(w, ldw, x, ldx, y, ldy, np, nr, k);
  }
}

// Up to this many tokens bf16/f16 weights are multiplied in place (the first token tile
// prefetches them); more convert row blocks to f32 first. Measured on Zen 5, bf16, 2 threads:
// in place 1.3-1.4x faster in batched decode of 16-32 sequences and prefill of 32 tokens, 1.25x at
// 64 (longer prompts: see docs/benchmarks.md).
constexpr std::int64_t kStreamMaxTokens = 64;

template <DType T>
void dot_tile_t(const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y, std::int64_t ldy,
                std::int64_t nt, std::int64_t nr, std::int64_t k) {
  const bool stream = nt <= kStreamMaxTokens;
  std::int64_t t = 0;
  for (; t + 2 * kPairs <= nt; t += 2 * kPairs) {
    if (stream && t == 0) tile_rows<T, kPairs, true>(w, ldw, x, ldx, y, ldy, nr, k);
    else tile_rows<T, kPairs, false>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nr, k);
  }
  const std::int64_t pairs = (nt - t) / 2;
  if (pairs > 0) {
    if (stream && t == 0) tile_rest_pairs<T, kPairs - 1, true>(w, ldw, x, ldx, y, ldy, pairs, nr, k);
    else tile_rest_pairs<T, kPairs - 1, false>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, pairs, nr, k);
  }
  t += 2 * pairs;
  if (t < nt) avx2_kernels().dot_tile(T, w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nt - t, nr, k);
}

void dot_tile(DType wt, const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y,
              std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  if (nt < 4) return avx2_kernels().dot_tile(wt, w, ldw, x, ldx, y, ldy, nt, nr, k);
  switch (wt) {
    case DType::kF32: dot_tile_t<DType::kF32>(w, ldw, x, ldx, y, ldy, nt, nr, k); break;
    case DType::kBF16: dot_tile_t<DType::kBF16>(w, ldw, x, ldx, y, ldy, nt, nr, k); break;
    case DType::kF16: dot_tile_t<DType::kF16>(w, ldw, x, ldx, y, ldy, nt, nr, k); break;
    default: break;  // a block format: dot_tile_q's
  }
}

template <DType T>
inline __m512 load16(const void* base, std::int64_t i) {
  if constexpr (T == DType::kBF16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const std::uint16_t*>(base) + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    static_assert(T == DType::kF16);
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const std::uint16_t*>(base) + i)));
  }
}

template <DType T>
void to_f32_t(const void* src, float* dst, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, load16<T>(src, i));
  for (; i < n; ++i) dst[i] = load1<T>(src, i);
}

void to_f32(DType t, const void* src, float* dst, std::int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); break;
    case DType::kBF16: to_f32_t<DType::kBF16>(src, dst, n); break;
    case DType::kF16: to_f32_t<DType::kF16>(src, dst, n); break;
    default: dequantize_row(t, src, dst, n); break;  // a block format: n a multiple of the block
  }
}

void axpy(float a, const float* x, float* y, std::int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] = __builtin_fmaf(a, x[i], y[i]);
}

// 16·V output columns (V <= 8) live in V registers while the rows stream past.
template <int V>
void weighted_rows_block(const float* w, std::int64_t n, const float* rows, std::int64_t ld, float* out) {
  __m512 acc[V];
  PLEXUS_UNROLL for (int v = 0; v < V; ++v) acc[v] = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < n; ++j) {
    const __m512 wj = _mm512_set1_ps(w[j]);
    const float* r = rows + j * ld;
    PLEXUS_UNROLL for (int v = 0; v < V; ++v) acc[v] = _mm512_fmadd_ps(wj, _mm512_loadu_ps(r + 16 * v), acc[v]);
  }
  PLEXUS_UNROLL for (int v = 0; v < V; ++v) _mm512_storeu_ps(out + 16 * v, acc[v]);
}

void weighted_rows(const float* w, std::int64_t n, const float* rows, std::int64_t ld, float* out, std::int64_t d) {
  std::int64_t c = 0;
  for (; c + 128 <= d; c += 128) weighted_rows_block<8>(w, n, rows + c, ld, out + c);
  switch ((d - c) / 16) {
    case 0: break;
    case 1: weighted_rows_block<1>(w, n, rows + c, ld, out + c); break;
    case 2: weighted_rows_block<2>(w, n, rows + c, ld, out + c); break;
    case 3: weighted_rows_block<3>(w, n, rows + c, ld, out + c); break;
    case 4: weighted_rows_block<4>(w, n, rows + c, ld, out + c); break;
    case 5: weighted_rows_block<5>(w, n, rows + c, ld, out + c); break;
    case 6: weighted_rows_block<6>(w, n, rows + c, ld, out + c); break;
    case 7: weighted_rows_block<7>(w, n, rows + c, ld, out + c); break;
  }
  c += (d - c) / 16 * 16;
  for (; c < d; ++c) {
    float s = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) s = __builtin_fmaf(w[j], rows[j * ld + c], s);
    out[c] = s;
  }
}

void scale(float a, float* y, std::int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(av, _mm512_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] *= a;
}

// The AVX2 exp8, lane for lane (round to nearest even, then the same polynomial).
inline __m512 exp16(__m512 x) {
  using namespace exp_poly;
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kMin)), _mm512_set1_ps(kMax));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Hi), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP5);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP0));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

inline float exp1(float x) { return _mm512_cvtss_f32(exp16(_mm512_set1_ps(x))); }

// The sum keeps the AVX2 order: one 8-lane accumulator takes 8 results at a time, in order.
float exp_shift_sum(float* x, float shift, std::int64_t n) {
  const __m512 sv = _mm512_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), sv));
    _mm512_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
    acc = _mm256_add_ps(acc, _mm512_extractf32x8_ps(e, 1));
  }
  if (i + 8 <= n) {
    const __m256 e = _mm512_castps512_ps256(exp16(_mm512_sub_ps(_mm512_zextps256_ps512(_mm256_loadu_ps(x + i)), sv)));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
    i += 8;
  }
  float s = reduce8(acc);
  for (; i < n; ++i) s += (x[i] = exp1(x[i] - shift));
  return s;
}

void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 zero = _mm512_setzero_ps();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 d = _mm512_add_ps(one, exp16(_mm512_sub_ps(zero, g)));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_div_ps(g, d), _mm512_loadu_ps(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + exp1(-gate[i])) * up[i];
}

}  // namespace

const IsaKernels& avx512_kernels() {
  const IsaKernels& a = avx2_kernels();
  // dot and sum_squares reduce one vector in the 8-lane order: the AVX2 kernels already do that
  // at the memory's pace.
  static const IsaKernels k = [&a] {
    IsaKernels t{"avx512", kRows,        dot_tile, to_f32, a.dot,   axpy, weighted_rows,
                 scale,    exp_shift_sum, silu_mul, a.sum_squares, false, kStreamMaxTokens};
    // Quantised weights: VNNI's dpbusd where the CPU has it, else the AVX2 kernels (same bits).
    t.dot_tile_q = cpu_has_avx512_vnni() ? dot_tile_q_avx512vnni : a.dot_tile_q;
    return t;
  }();
  return k;
}

}  // namespace plexus
