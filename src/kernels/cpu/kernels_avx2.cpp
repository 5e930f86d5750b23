// AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma -mf16c and only called after a CPUID
// check. Dot products keep one 8-lane accumulator per (token, row), so a tile of any shape
// gives the same bits as the generic kernels.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/exp_poly.h"
#include "kernels/cpu/isa.h"
#include "kernels/ref/dequantize.h"
#include "kernels/cpu/quant_kernels.h"

namespace plexus {
namespace {

inline float reduce8(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  const __m128 s4 = _mm_add_ps(lo, hi);                   // l0+l4, l1+l5, l2+l6, l3+l7
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
  const __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

template <DType T>
inline __m256 load8(const void* base, std::int64_t i) {
  if constexpr (T == DType::kF32) {
    return _mm256_loadu_ps(static_cast<const float*>(base) + i);
  } else if constexpr (T == DType::kBF16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(base) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(base) + i));
    return _mm256_cvtph_ps(h);
  }
}

template <DType T>
inline float load1(const void* base, std::int64_t i) {
  if constexpr (T == DType::kF32) return static_cast<const float*>(base)[i];
  else if constexpr (T == DType::kBF16) return bf16_to_f32(static_cast<const std::uint16_t*>(base)[i]);
  else return f16_to_f32(static_cast<const std::uint16_t*>(base)[i]);
}

// NT tokens × NR rows, register-blocked. The loops over t and r must unroll completely so the
// accumulators live in registers (otherwise every FMA round-trips through the stack).
#define PLEXUS_UNROLL _Pragma("GCC unroll 16")
// Decode streams the weights once: while a tile reads its rows, the rows about this many bytes
// further on (at least one tile on) are fetched into L2. Measured on the small model, one thread:
// 8 KiB into L2 decoded bf16 18 % faster than four tiles ahead into L1 (f32 the same); 4, 12 and
// 16 KiB, 8 KiB into L1, and fetching a range's first rows up front as well were slower.
constexpr std::int64_t kPrefetchBytes = 8192;
// PF: prefetch (the first token tile over rows that stream from memory; later token tiles of
// the same rows find them in cache).
template <DType T, int NT, int NR, bool PF>
void tile(const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y, std::int64_t ldy,
          std::int64_t k) {
  constexpr std::int64_t es = T == DType::kF32 ? 4 : 2;
  const std::uint8_t* wb = static_cast<const std::uint8_t*>(w);
  __m256 acc[NT][NR];
  PLEXUS_UNROLL for (int t = 0; t < NT; ++t) {
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) acc[t][r] = _mm256_setzero_ps();
  }
  // Rows ahead to prefetch (a vector dot product, ldw 0, prefetches its own row).
  const std::int64_t row_bytes = ldw * es;
  const std::int64_t ahead = row_bytes > 0 ? std::max<std::int64_t>(NR, (kPrefetchBytes + row_bytes - 1) / row_bytes) : 0;
  std::int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    if constexpr (PF) {
      // One line per row every 64 bytes, so the memory system always has requests in flight.
      if (((i * es) & 63) == 0) {
        PLEXUS_UNROLL for (int r = 0; r < NR; ++r) {
          _mm_prefetch(reinterpret_cast<const char*>(wb + (r + ahead) * row_bytes + i * es), _MM_HINT_T1);
        }
      }
    }
    __m256 wv[NR];
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) wv[r] = load8<T>(wb + r * ldw * es, i);
    PLEXUS_UNROLL for (int t = 0; t < NT; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + t * ldx + i);
      PLEXUS_UNROLL for (int r = 0; r < NR; ++r) acc[t][r] = _mm256_fmadd_ps(wv[r], xv, acc[t][r]);
    }
  }
  PLEXUS_UNROLL for (int t = 0; t < NT; ++t) {
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) {
      float s = reduce8(acc[t][r]);
      for (std::int64_t j = i; j < k; ++j) s = __builtin_fmaf(load1<T>(wb + r * ldw * es, j), x[t * ldx + j], s);
      y[t * ldy + r] = s;
    }
  }
}

template <DType T, int NT, bool PF>
void tile_rows(const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y, std::int64_t ldy,
               std::int64_t nr, std::int64_t k) {
  constexpr std::int64_t es = T == DType::kF32 ? 4 : 2;
  // 12 accumulators at most, leaving registers for loads. One token (decode) reads 8 rows at a
  // time: 8 weight streams in flight decoded 11 % faster than 4 (bf16 and f32, one thread); 12
  // rows spilled bf16 registers.
  constexpr int kRows = NT == 1 ? 8 : NT == 2 ? 4 : 3;  // 3: the table's tile_rows
  const std::uint8_t* wb = static_cast<const std::uint8_t*>(w);
  std::int64_t r = 0;
  for (; r + kRows <= nr; r += kRows) tile<T, NT, kRows, PF>(wb + r * ldw * es, ldw, x, ldx, y + r, ldy, k);
  if constexpr (kRows > 4) {
    if (r + 4 <= nr) {
      tile<T, NT, 4, PF>(wb + r * ldw * es, ldw, x, ldx, y + r, ldy, k);
      r += 4;
    }
  }
  switch (nr - r) {
    case 0: break;
    case 1: tile<T, NT, 1, PF>(wb + r * ldw * es, ldw, x, ldx, y + r, ldy, k); break;
    case 2: tile<T, NT, 2, PF>(wb + r * ldw * es, ldw, x, ldx, y + r, ldy, k); break;
    case 3: tile<T, NT, 3, PF>(wb + r * ldw * es, ldw, x, ldx, y + r, ldy, k); break;
  }
}

// Up to this many tokens bf16/f16 weights are multiplied in place (the first 4-token tile
// prefetches them); more convert row blocks to f32 first. Measured on Zen 5 running this table,
// bf16 prefill, 2 threads: in place 1.4x faster at 16 tokens, 1.03-1.45x at 24 to 48, 0.86x at 64.
constexpr std::int64_t kStreamMaxTokens = 32;

template <DType T>
void dot_tile_t(const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y, std::int64_t ldy,
                std::int64_t nt, std::int64_t nr, std::int64_t k) {
  std::int64_t t = 0;
  if (nt >= 4 && nt <= kStreamMaxTokens) {
    tile_rows<T, 4, true>(w, ldw, x, ldx, y, ldy, nr, k);
    t = 4;
  }
  for (; t + 4 <= nt; t += 4) tile_rows<T, 4, false>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nr, k);
  switch (nt - t) {
    case 0: break;
    case 1: tile_rows<T, 1, true>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nr, k); break;
    case 2: tile_rows<T, 2, true>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nr, k); break;
    case 3: tile_rows<T, 3, false>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nr, k); break;
  }
}

void dot_tile(DType wt, const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y,
              std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  switch (wt) {
    case DType::kF32: dot_tile_t<DType::kF32>(w, ldw, x, ldx, y, ldy, nt, nr, k); break;
    case DType::kBF16: dot_tile_t<DType::kBF16>(w, ldw, x, ldx, y, ldy, nt, nr, k); break;
    case DType::kF16: dot_tile_t<DType::kF16>(w, ldw, x, ldx, y, ldy, nt, nr, k); break;
    default: break;  // a block format: dot_tile_q's
  }
}

template <DType T>
void to_f32_t(const void* src, float* dst, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8<T>(src, i));
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

float dot(const float* a, const float* b, std::int64_t n) {
  float y;
  tile<DType::kF32, 1, 1, true>(a, 0, b, 0, &y, 0, n);
  return y;
}

void axpy(float a, const float* x, float* y, std::int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] = __builtin_fmaf(a, x[i], y[i]);
}

// Up to 64 output columns live in 8 registers while the rows stream past.
template <int V>
void weighted_rows_block(const float* w, std::int64_t n, const float* rows, std::int64_t ld, float* out) {
  __m256 acc[V];
  PLEXUS_UNROLL for (int v = 0; v < V; ++v) acc[v] = _mm256_setzero_ps();
  for (std::int64_t j = 0; j < n; ++j) {
    const __m256 wj = _mm256_broadcast_ss(w + j);
    const float* r = rows + j * ld;
    PLEXUS_UNROLL for (int v = 0; v < V; ++v) acc[v] = _mm256_fmadd_ps(wj, _mm256_loadu_ps(r + 8 * v), acc[v]);
  }
  PLEXUS_UNROLL for (int v = 0; v < V; ++v) _mm256_storeu_ps(out + 8 * v, acc[v]);
}

void weighted_rows(const float* w, std::int64_t n, const float* rows, std::int64_t ld, float* out, std::int64_t d) {
  std::int64_t c = 0;
  for (; c + 64 <= d; c += 64) weighted_rows_block<8>(w, n, rows + c, ld, out + c);
  for (; c + 8 <= d; c += 8) weighted_rows_block<1>(w, n, rows + c, ld, out + c);
  for (; c < d; ++c) {
    float s = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) s = __builtin_fmaf(w[j], rows[j * ld + c], s);
    out[c] = s;
  }
}

void scale(float a, float* y, std::int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(av, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] *= a;
}

inline __m256 exp8(__m256 x) {
  using namespace exp_poly;
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kMin)), _mm256_set1_ps(kMax));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP5);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP0));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

inline float exp1(float x) {
  float buf[8] = {x, 0, 0, 0, 0, 0, 0, 0};
  _mm256_storeu_ps(buf, exp8(_mm256_loadu_ps(buf)));
  return buf[0];
}

float exp_shift_sum(float* x, float shift, std::int64_t n) {
  const __m256 sv = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), sv));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float s = reduce8(acc);
  for (; i < n; ++i) s += (x[i] = exp1(x[i] - shift));
  return s;
}

void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 zero = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 d = _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, g)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, d), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + exp1(-gate[i])) * up[i];
}

float sum_squares(const float* x, std::int64_t n) { return dot(x, x, n); }

}  // namespace

const IsaKernels& avx2_kernels() {
  static const IsaKernels k = [] {
    IsaKernels t{"avx2", 3, dot_tile, to_f32, dot, axpy, weighted_rows, scale, exp_shift_sum, silu_mul, sum_squares, false, kStreamMaxTokens};
    t.dot_tile_q = dot_tile_q_avx2;
    return t;
  }();
  return k;
}

}  // namespace plexus
