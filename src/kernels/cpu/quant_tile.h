// The register-tiled driver of the quantised dot kernels, shared by the AVX2 and AVX-512 files
// (included into each, so each compiles it with its own flags; internal linkage keeps the copies
// apart). A format kernel F supplies:
//   F::kBlockBytes, F::kXBytes  bytes of one weight block and of one x block;
//   F::W                        one weight block unpacked (shared by every token of a tile);
//   F::load(block, W&)          unpacks a weight block;
//   F::acc(W, xblock, __m256&)  adds the block's products with one token to the 8-lane sums.
// Must be included after <immintrin.h> (or avx512_intrinsics.h).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace plexus {
namespace {

inline float q_reduce8(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  const __m128 s4 = _mm_add_ps(lo, hi);                     // l0+l4, l1+l5, l2+l6, l3+l7
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
  const __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

// While a tile streams its rows, the rows about this many bytes further on (at least one tile on)
// are fetched into L2, as the bf16 decode tiles do.
constexpr std::int64_t kQPrefetchBytes = 8192;

#define PLEXUS_Q_UNROLL _Pragma("GCC unroll 16")

// NT tokens × NR rows over nb blocks. PF: prefetch ahead (the rows stream from memory).
// Flattened: F::load and F::acc inline into the tile (else GCC leaves the larger loads out of
// line and passes W through memory).
template <class F, int NT, int NR, bool PF>
__attribute__((flatten)) void q_tile(const std::uint8_t* w, std::int64_t ldw, const std::uint8_t* x, std::int64_t ldx, float* y,
            std::int64_t ldy, std::int64_t nb) {
  __m256 acc[NT][NR];
  PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
    PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) acc[t][r] = _mm256_setzero_ps();
  }
  const std::int64_t ahead = std::max<std::int64_t>(NR, (kQPrefetchBytes + ldw - 1) / ldw);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::int64_t off = b * F::kBlockBytes;
    if constexpr (PF) {
      PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) {
        for (std::int64_t o = 0; o < F::kBlockBytes; o += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(w + (r + ahead) * ldw + off + o), _MM_HINT_T1);
        }
      }
    }
    PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) {
      typename F::W wv;
      F::load(w + r * ldw + off, wv);
      PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) F::acc(wv, x + t * ldx + b * F::kXBytes, acc[t][r]);
    }
  }
  PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
    PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) y[t * ldy + r] = q_reduce8(acc[t][r]);
  }
}

template <class F, int NT, int NR, bool PF>
void q_tile_rest_rows(const std::uint8_t* w, std::int64_t ldw, const std::uint8_t* x, std::int64_t ldx, float* y,
                      std::int64_t ldy, std::int64_t nr, std::int64_t nb) {
  if constexpr (NR > 0) {
    if (nr == NR) return q_tile<F, NT, NR, PF>(w, ldw, x, ldx, y, ldy, nb);
    q_tile_rest_rows<F, NT, NR - 1, PF>(w, ldw, x, ldx, y, ldy, nr, nb);
  }
}

// NT tokens × any number of rows, NR at a time.
template <class F, int NT, int NR, bool PF>
void q_tile_rows(const std::uint8_t* w, std::int64_t ldw, const std::uint8_t* x, std::int64_t ldx, float* y,
                 std::int64_t ldy, std::int64_t nr, std::int64_t nb) {
  std::int64_t r = 0;
  for (; r + NR <= nr; r += NR) q_tile<F, NT, NR, PF>(w + r * ldw, ldw, x, ldx, y + r, ldy, nb);
  if (r < nr) q_tile_rest_rows<F, NT, NR - 1, PF>(w + r * ldw, ldw, x, ldx, y + r, ldy, nr - r, nb);
}

// A format's blocks already unpacked (F::W in memory): prefill unpacks a row block once and
// every token tile reads it from cache.
template <class F>
struct Unpacked {
  using W = const typename F::W*;
  static constexpr std::int64_t kBlockBytes = sizeof(typename F::W), kXBytes = F::kXBytes;
  static void load(const std::uint8_t* b, W& w) { w = reinterpret_cast<W>(b); }
  static void acc(W w, const std::uint8_t* xb, __m256& a) { F::acc(*w, xb, a); }
};

// Unpacked rows (in cache, no prefetch) × any tokens: token tiles of kNT, then the rest.
template <class U, int kNT, int kNR>
void q_dot_tile_unpacked(const std::uint8_t* w, std::int64_t ldw, const std::uint8_t* x, std::int64_t ldx, float* y,
                         std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t nb) {
  std::int64_t t = 0;
  for (; t + kNT <= nt; t += kNT) q_tile_rows<U, kNT, kNR, false>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nr, nb);
  const std::uint8_t* xt = x + t * ldx;
  float* yt = y + t * ldy;
  switch (nt - t) {
    case 0: break;
    case 1: q_tile_rows<U, 1, kNR, false>(w, ldw, xt, ldx, yt, ldy, nr, nb); break;
    case 2: q_tile_rows<U, 2, kNR, false>(w, ldw, xt, ldx, yt, ldy, nr, nb); break;
    default: q_tile_rows<U, 3, kNR, false>(w, ldw, xt, ldx, yt, ldy, nr, nb); break;
  }
}

// Prefill's wide tiles. A format F may name F::Wide, the form its blocks take in prefill, with
//   Wide::W, load(block, W&)   a weight block of F unpacked once per row block;
//   Wide::kXBytes              bytes of an x block (F's);
//   Wide::acc_tile<NT, NR>(w[NR], x, ldx, acc[NT][NR])  one weight block of NR rows times NT
//     tokens, the same sums per pair as F::acc, computed chunk by chunk for every pair together
//     (NT · NR independent integer chains hide the multiply latency one pair's chain exposes).
template <class F>
concept HasWide = requires { typename F::Wide; };

// NT tokens × NR rows of unpacked blocks (F::W rows of ldw bytes, in cache) over nb blocks.
template <class F, int NT, int NR>
__attribute__((flatten)) void q_tile_wide(const std::uint8_t* w, std::int64_t ldw, const std::uint8_t* x, std::int64_t ldx,
                                          float* y, std::int64_t ldy, std::int64_t nb) {
  __m256 acc[NT][NR];
  PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
    PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) acc[t][r] = _mm256_setzero_ps();
  }
  for (std::int64_t b = 0; b < nb; ++b) {
    const typename F::W* wr[NR];
    PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) wr[r] = reinterpret_cast<const typename F::W*>(w + r * ldw) + b;
    F::template acc_tile<NT, NR>(wr, x + b * F::kXBytes, ldx, acc);
  }
  PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
    PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) y[t * ldy + r] = q_reduce8(acc[t][r]);
  }
}

// NT tokens × nr unpacked rows, NR at a time, then the rest.
template <class F, int NT, int NR>
void q_tile_wide_rows(const std::uint8_t* w, std::int64_t ldw, const std::uint8_t* x, std::int64_t ldx, float* y,
                      std::int64_t ldy, std::int64_t nr, std::int64_t nb) {
  std::int64_t r = 0;
  for (; r + NR <= nr; r += NR) q_tile_wide<F, NT, NR>(w + r * ldw, ldw, x, ldx, y + r, ldy, nb);
  const std::int64_t left = nr - r;
  if constexpr (NR > 1) {
    if (left > 0) q_tile_wide_rows<F, NT, NR - 1>(w + r * ldw, ldw, x, ldx, y + r, ldy, left, nb);
  }
}

// Unpacked rows × any tokens: tiles of kNT tokens, then the rest 1..kNT-1 (kNT ≤ 4).
template <class F, int kNT, int kNR>
void q_dot_tile_wide(const std::uint8_t* w, std::int64_t ldw, const std::uint8_t* x, std::int64_t ldx, float* y,
                     std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t nb) {
  static_assert(kNT <= 4);
  std::int64_t t = 0;
  for (; t + kNT <= nt; t += kNT) q_tile_wide_rows<F, kNT, kNR>(w, ldw, x + t * ldx, ldx, y + t * ldy, ldy, nr, nb);
  const std::uint8_t* xt = x + t * ldx;
  float* yt = y + t * ldy;
  switch (nt - t) {
    case 0: break;
    case 1: q_tile_wide_rows<F, 1, kNR>(w, ldw, xt, ldx, yt, ldy, nr, nb); break;
    case 2: q_tile_wide_rows<F, 2, kNR>(w, ldw, xt, ldx, yt, ldy, nr, nb); break;
    default: q_tile_wide_rows<F, 3, kNR>(w, ldw, xt, ldx, yt, ldy, nr, nb); break;
  }
}

// F's wide tiles (4 tokens × kNR rows) over nr rows and nt tokens: the rows unpacked once as
// F::Wide::W.
template <class F, int kNR>
void q_dot_wide(const std::uint8_t* w, std::int64_t ldw, const std::uint8_t* x, std::int64_t ldx, float* y,
                std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t nb) {
  using Wd = typename F::Wide;
  thread_local std::vector<typename Wd::W> unpacked;  // grows once to its largest size
  if (unpacked.size() < static_cast<std::size_t>(nr * nb)) unpacked.resize(static_cast<std::size_t>(nr * nb));
  for (std::int64_t r = 0; r < nr; ++r) {
    for (std::int64_t b = 0; b < nb; ++b) Wd::load(w + r * ldw + b * F::kBlockBytes, unpacked[static_cast<std::size_t>(r * nb + b)]);
  }
  const std::int64_t ldu = nb * static_cast<std::int64_t>(sizeof(typename Wd::W));
  q_dot_tile_wide<Wd, 4, kNR>(reinterpret_cast<const std::uint8_t*>(unpacked.data()), ldu, x, ldx, y, ldy, nt, nr, nb);
}

// Any tokens × any rows: token tiles of kNT (rows kNR at a time), the rest 1..kNT-1 tokens with
// kNR1 rows (one token: decode). The first token tile prefetches (the rows come from memory);
// later ones find them in cache. More than kNT tokens unpack the rows once and multiply them
// from cache: in wide tiles of 4 tokens × kNRWide rows where F has them.
template <class F, int kNT, int kNR, int kNR1, int kNRWide = kNR>
void q_dot_tile(const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y, std::int64_t ldy,
                std::int64_t nt, std::int64_t nr, std::int64_t nb) {
  const std::uint8_t* wb = static_cast<const std::uint8_t*>(w);
  const std::uint8_t* xb = static_cast<const std::uint8_t*>(xq);
  if constexpr (HasWide<F>) {
    if (nt > kNT) return q_dot_wide<F, kNRWide>(wb, ldw, xb, ldxq, y, ldy, nt, nr, nb);
  }
  if (nt > kNT) {
    // Several token tiles: unpack the rows once (nr × nb blocks), then multiply from cache.
    using U = Unpacked<F>;
    thread_local std::vector<typename F::W> unpacked;  // grows once to its largest size
    if (unpacked.size() < static_cast<std::size_t>(nr * nb)) unpacked.resize(static_cast<std::size_t>(nr * nb));
    for (std::int64_t r = 0; r < nr; ++r) {
      for (std::int64_t b = 0; b < nb; ++b) F::load(wb + r * ldw + b * F::kBlockBytes, unpacked[static_cast<std::size_t>(r * nb + b)]);
    }
    const std::int64_t ldu = nb * U::kBlockBytes;
    return q_dot_tile_unpacked<U, kNT, kNR>(reinterpret_cast<const std::uint8_t*>(unpacked.data()), ldu, xb, ldxq, y,
                                           ldy, nt, nr, nb);
  }
  std::int64_t t = 0;
  for (; t + kNT <= nt; t += kNT) {
    if (t == 0) q_tile_rows<F, kNT, kNR, true>(wb, ldw, xb, ldxq, y, ldy, nr, nb);
    else q_tile_rows<F, kNT, kNR, false>(wb, ldw, xb + t * ldxq, ldxq, y + t * ldy, ldy, nr, nb);
  }
  const std::int64_t left = nt - t;
  const std::uint8_t* xt = xb + t * ldxq;
  float* yt = y + t * ldy;
  const bool pf = t == 0;
  static_assert(kNT <= 4);
  switch (left) {
    case 0: break;
    case 1:
      if (pf) q_tile_rows<F, 1, kNR1, true>(wb, ldw, xt, ldxq, yt, ldy, nr, nb);
      else q_tile_rows<F, 1, kNR1, false>(wb, ldw, xt, ldxq, yt, ldy, nr, nb);
      break;
    case 2:
      if (pf) q_tile_rows<F, 2, kNR, true>(wb, ldw, xt, ldxq, yt, ldy, nr, nb);
      else q_tile_rows<F, 2, kNR, false>(wb, ldw, xt, ldxq, yt, ldy, nr, nb);
      break;
    default:
      if (pf) q_tile_rows<F, 3, kNR, true>(wb, ldw, xt, ldxq, yt, ldy, nr, nb);
      else q_tile_rows<F, 3, kNR, false>(wb, ldw, xt, ldxq, yt, ldy, nr, nb);
      break;
  }
}

}  // namespace
}  // namespace plexus
