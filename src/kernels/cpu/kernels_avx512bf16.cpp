// The opt-in avx512bf16 table (PLEXUS_ISA=avx512bf16 only, never the default): the avx512 table
// plus round_bf16 and dot_tile_bf16, with which matmul multiplies bf16 weights by 4 or more
// tokens: the activations rounded to bf16 once per launch, then AVX512_BF16 `vdpbf16ps` (pairs of
// bf16 products added into f32 lanes) against the weights read in place. Those matmuls are NOT
// bitwise equal to the other tables', and not exact: each activation carries a relative rounding
// error up to 2^-9, and the sum order differs (16 lanes of pairs). Everything else (f32/f16
// weights, fewer than 4 tokens, dot_tile itself, the element-wise kernels) is avx512's, bit for
// bit. Compiled with -mavx512bf16 and only called after a CPUID check.
#include "kernels/cpu/avx512_intrinsics.h"
#include "kernels/cpu/isa.h"

namespace plexus {
namespace {

// Elements [i, i + 32) of a bf16 row, zeros past n (so a short tail adds nothing).
inline __m512bh load32(const std::uint16_t* p, std::int64_t i, std::int64_t n) {
  if (i + 32 <= n) return (__m512bh)_mm512_loadu_si512(p + i);
  const __mmask32 m = static_cast<__mmask32>((std::uint64_t{1} << (n - i)) - 1);
  return (__m512bh)_mm512_maskz_loadu_epi16(m, p + i);
}

// NT tokens × NR rows: 32 k-elements per instruction into NT·NR 16-lane f32 accumulators.
#define PLEXUS_UNROLL _Pragma("GCC unroll 16")
template <int NT, int NR>
void tile(const std::uint16_t* w, std::int64_t ldw, const std::uint16_t* x, std::int64_t ldx, float* y,
          std::int64_t ldy, std::int64_t k) {
  __m512 acc[NT][NR];
  PLEXUS_UNROLL for (int t = 0; t < NT; ++t) {
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) acc[t][r] = _mm512_setzero_ps();
  }
  for (std::int64_t i = 0; i < k; i += 32) {
    __m512bh wv[NR];
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) wv[r] = load32(w + r * ldw, i, k);
    PLEXUS_UNROLL for (int t = 0; t < NT; ++t) {
      const __m512bh xv = load32(x + t * ldx, i, k);
      PLEXUS_UNROLL for (int r = 0; r < NR; ++r) acc[t][r] = _mm512_dpbf16_ps(acc[t][r], wv[r], xv);
    }
  }
  PLEXUS_UNROLL for (int t = 0; t < NT; ++t) {
    PLEXUS_UNROLL for (int r = 0; r < NR; ++r) y[t * ldy + r] = _mm512_reduce_add_ps(acc[t][r]);
  }
}

template <int NT, int NR>
void tile_rest_rows(const std::uint16_t* w, std::int64_t ldw, const std::uint16_t* x, std::int64_t ldx, float* y,
                    std::int64_t ldy, std::int64_t nr, std::int64_t k) {
  if constexpr (NR > 0) {
    if (nr == NR) return tile<NT, NR>(w, ldw, x, ldx, y, ldy, k);
    tile_rest_rows<NT, NR - 1>(w, ldw, x, ldx, y, ldy, nr, k);
  }
}

// Measured on Zen 5 (bf16 1536×576 by 256 tokens, one thread): 4 tokens × 6 rows ran 1.8× the
// avx512 fp32 tile.
constexpr int kTokens = 4;
constexpr int kRows = 6;

template <int NT>
void tile_rows(const std::uint16_t* w, std::int64_t ldw, const std::uint16_t* x, std::int64_t ldx, float* y,
               std::int64_t ldy, std::int64_t nr, std::int64_t k) {
  std::int64_t r = 0;
  for (; r + kRows <= nr; r += kRows) tile<NT, kRows>(w + r * ldw, ldw, x, ldx, y + r, ldy, k);
  if (r < nr) tile_rest_rows<NT, kRows - 1>(w + r * ldw, ldw, x, ldx, y + r, ldy, nr - r, k);
}

template <int NT>
void tile_rest_tokens(const std::uint16_t* w, std::int64_t ldw, const std::uint16_t* x, std::int64_t ldx, float* y,
                      std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  if constexpr (NT > 0) {
    if (nt == NT) return tile_rows<NT>(w, ldw, x, ldx, y, ldy, nr, k);
    tile_rest_tokens<NT - 1>(w, ldw, x, ldx, y, ldy, nt, nr, k);
  }
}

// x (nt, ldx) f32 → out (nt, k) bf16, round to nearest even (vcvtne2ps2bf16).
void round_bf16(const float* x, std::int64_t ldx, std::int64_t nt, std::int64_t k, std::uint16_t* out) {
  for (std::int64_t t = 0; t < nt; ++t) {
    const float* xr = x + t * ldx;
    std::uint16_t* o = out + t * k;
    std::int64_t i = 0;
    for (; i + 32 <= k; i += 32) {
      const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xr + i + 16), _mm512_loadu_ps(xr + i));
      _mm512_storeu_si512(o + i, (__m512i)b);
    }
    for (; i < k; ++i) o[i] = f32_to_bf16(xr[i]);
  }
}

void dot_tile_bf16(const std::uint16_t* w, std::int64_t ldw, const std::uint16_t* x, std::int64_t ldx, float* y,
                   std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  std::int64_t t = 0;
  for (; t + kTokens <= nt; t += kTokens) tile_rows<kTokens>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nr, k);
  if (t < nt) tile_rest_tokens<kTokens - 1>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nt - t, nr, k);
}

}  // namespace

const IsaKernels& avx512bf16_kernels() {
  static const IsaKernels k = [] {
    IsaKernels t = avx512_kernels();
    t.name = "avx512bf16";
    t.tile_rows = kRows;
    t.prefill_bf16_in_place = true;
    t.round_bf16 = round_bf16;
    t.dot_tile_bf16 = dot_tile_bf16;
    return t;
  }();
  return k;
}

}  // namespace plexus
