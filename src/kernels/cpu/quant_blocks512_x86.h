// The AVX-512 VNNI decode kernels (one token, 512-bit registers) of the quantised dot kernels:
// the same bits as the 256-bit formats of quant_blocks_x86.h (order: quant_kernels.h), some
// sharing their W. Included by quant_dispatch_x86.h in the VNNI build only.
#pragma once
#include "kernels/cpu/quant_blocks_x86.h"

namespace plexus {
namespace {

// A 512-bit register of two 256-bit halves.
inline __m512i join256(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// The nibbles of two blocks of 32 (Q4_0's packing): block 0's 32 (elements 0..31), then block 1's.
inline __m512i nibbles64(const std::uint8_t* qs0, const std::uint8_t* qs1) {
  const __m256i t = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0)));
  // [qs0, qs1, qs0 >> 4, qs1 >> 4] (128-bit lanes) reordered to [qs0, qs0 >> 4, qs1, qs1 >> 4].
  const __m512i u = join256(t, _mm256_srli_epi16(t, 4));
  return _mm512_and_si512(_mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(3, 1, 2, 0)), _mm512_set1_epi8(15));
}

// Two blocks of 32 at a time for one token on 512-bit registers (a "block" here is a pair). The
// format V gives both blocks' values as unsigned bytes u = v + V::kBias (V::values), so one
// dpbusd multiplies them with x, the accumulator starting at −kBias · (sum of x over each 4): the
// lanes hold the products with v (exact). Block 0's lanes, then block 1's, go through the f32
// order of quant_kernels.h as in block32_acc.
//   V::kBytes  bytes of one block; V::values(block 0, block 1)  the 64 bytes u.
// (Measured on the AVX-512 host of docs/benchmarks.md: a gain for Q4_0 and Q5_0, none for
// IQ4_NL, Q4_1 and Q5_1, which keep the 256-bit kernels.)
template <class V>
struct Pair32K512 {
  static constexpr std::int64_t kBlockBytes = 2 * V::kBytes, kXBytes = 2 * sizeof(XBlock32);
  struct W {
    __m512i u;  // block 0's 32 values + kBias, then block 1's
    __m256 d0, d1;
  };
  static void load(const std::uint8_t* b, W& w) {
    w.u = V::values(b, b + V::kBytes);
    w.d0 = _mm256_set1_ps(load_f16(b));
    w.d1 = _mm256_set1_ps(load_f16(b + V::kBytes));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    constexpr std::int64_t kX1 = sizeof(XBlock32);
    const __m512i x = join256(load256(xb + 4), load256(xb + kX1 + 4));
    const __m512i zero = _mm512_setzero_si512();
    const __m512i bias_x = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(V::kBias), x));  // same for every row
    const __m512i p = _mm512_dpbusd_epi32(bias_x, w.u, x);
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm512_castsi512_si256(p)), _mm256_mul_ps(w.d0, _mm256_set1_ps(load_f32(xb))), a);
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(p, 1)), _mm256_mul_ps(w.d1, _mm256_set1_ps(load_f32(xb + kX1))), a);
  }
};

// Bit 4 of both blocks' values (Q5_0's qh, at qh0 and qh1) added to u.
inline __m512i add_fifth_bits(__m512i u, const std::uint8_t* qh0, const std::uint8_t* qh1) {
  std::uint32_t h0, h1;
  std::memcpy(&h0, qh0, 4);
  std::memcpy(&h1, qh1, 4);
  return _mm512_mask_add_epi8(u, _cvtu64_mask64(h0 | static_cast<std::uint64_t>(h1) << 32), u, _mm512_set1_epi8(16));
}

struct Q4_0V {
  static constexpr std::int64_t kBytes = sizeof(BlockQ4_0);
  static constexpr int kBias = 8;
  static __m512i values(const std::uint8_t* b0, const std::uint8_t* b1) { return nibbles64(b0 + 2, b1 + 2); }
};
struct Q5_0V {
  static constexpr std::int64_t kBytes = sizeof(BlockQ5_0);
  static constexpr int kBias = 16;
  static __m512i values(const std::uint8_t* b0, const std::uint8_t* b1) {
    return add_fifth_bits(nibbles64(b0 + offsetof(BlockQ5_0, qs), b1 + offsetof(BlockQ5_0, qs)), b0 + offsetof(BlockQ5_0, qh),
                          b1 + offsetof(BlockQ5_0, qh));
  }
};

// Q4_K for one token on 512-bit registers: one 64-byte load of qs holds sub-blocks j (low
// nibbles) and j + 1 (high nibbles) for j = 0, 2 in its halves, so each maddubs + dpwssd covers two
// sub-blocks: pairs (0, 2), (1, 3), (4, 6), (5, 7), the x halves joined to match (the loads are
// shared by the tile's rows). The 16 int32 lanes' halves are summed into S[l] (exact), then the
// f32 order of quant_kernels.h as in Q4_KK.
struct Q4_KK512 {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ4_K), kXBytes = sizeof(XBlock256);
  static constexpr int kLo[4] = {0, 1, 4, 5};  // pair p: sub-blocks kLo[p] (low half), kLo[p] + 2
  struct W {
    __m512i q[4];   // pair p's nibbles, 0..15
    __m512i sc[4];  // int16 lanes: sc[kLo[p]] in the low half, sc[kLo[p] + 2] in the high half
    __m256i m;      // m[j] in int32 lane j
    __m256 d, dmin;
  };
  // The scales, mins, d and dmin, the same in Q4_K and Q5_K.
  static void load_scales(const std::uint8_t* b, W& w) {
    const BlockQ4_K* blk = reinterpret_cast<const BlockQ4_K*>(b);
    std::uint64_t sc8, m8;
    q4_k_scales_mins8(blk->scales, sc8, m8);
    const __m512i sc16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc8))));
    PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) {
      const __m512i pick = _mm512_inserti64x4(_mm512_castsi256_si512(int16_lane_picker(kLo[p])), int16_lane_picker(kLo[p] + 2), 1);
      w.sc[p] = _mm512_shuffle_epi8(sc16, pick);
    }
    w.m = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(m8)));
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
    w.dmin = _mm256_set1_ps(_cvtsh_ss(blk->dmin));
  }
  static void load(const std::uint8_t* b, W& w) {
    load_scales(b, w);
    const BlockQ4_K* blk = reinterpret_cast<const BlockQ4_K*>(b);
    const __m512i m4 = _mm512_set1_epi8(15);
    for (int h = 0; h < 2; ++h) {
      const __m512i q = _mm512_loadu_si512(blk->qs + 64 * h);
      w.q[2 * h] = _mm512_and_si512(q, m4);
      w.q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    }
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    __m512i s = _mm512_setzero_si512();
    PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) {
      const __m512i x = _mm512_inserti64x4(_mm512_castsi256_si512(load256(xb + kXq + 32 * kLo[p])),
                                           load256(xb + kXq + 32 * (kLo[p] + 2)), 1);
      s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(w.q[p], x), w.sc[p]);
    }
    const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    const __m256 xd = _mm256_set1_ps(load_f32(xb));
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s8), _mm256_mul_ps(w.d, xd), a);
    const __m256i sums = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb + kXsums)));
    a = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(w.m, sums)), _mm256_mul_ps(w.dmin, xd), a);
  }
};
// Q6_KK512's vpermw indices: int16 lane j of chunk pair p = 2h + i takes scales[2 (4h + 2i) + j / 8].
struct Q6ScaleIdx {
  alignas(64) std::int16_t v[4][32];
  constexpr Q6ScaleIdx() : v{} {
    for (int p = 0; p < 4; ++p) {
      for (int j = 0; j < 32; ++j) v[p][j] = static_cast<std::int16_t>(2 * (4 * (p / 2) + 2 * (p % 2)) + j / 8);
    }
  }
};
constexpr Q6ScaleIdx kQ6ScaleIdx{};

// The 16-element scales of the chunk pairs of Q6_K's shape (Q6_K, Q3_K, Q2_K) from 16 signed
// bytes s8: int16 lane j of pair p takes s8[4p + j / 8].
inline void pair_scales16(__m128i s8, __m512i* sc) {
  const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(s8));
  PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) sc[p] = _mm512_permutexvar_epi16(_mm512_load_si512(kQ6ScaleIdx.v[p]), sc16);
}

// Q6_K for one token on 512-bit registers: chunk pairs (4h + 2i, 4h + 2i + 1) for h, i < 2, one
// 64-byte load of ql (nibbles) with qh's two bits per pair, so each pair's x is 64 contiguous
// bytes. The 6-bit values q (0..63, unsigned) go through maddubs, and 32 · (the pair sums of x)
// is taken off in int16 (the products with q − 32: exact, below 2^13), then dpwssd with the
// 16-element scales. The halves' int32 lanes summed give S[l]; f32 order as in Q6_KK.
struct Q6_KK512 {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ6_K), kXBytes = sizeof(XBlock256);
  struct W {
    __m512i q[4];   // pair p = 2h + i: its 64 values q, 0..63
    __m512i sc[4];  // pair p's int16 lanes 8k..8k+7: scales[2 (4h + 2i) + k], k < 4
    __m256 d;
  };
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(b);
    const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    // qh's bit pairs: low half of the register at shift 0 (or 4), high half at 2 (or 6).
    const __m512i sh_lo = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i sh_hi = _mm512_add_epi16(sh_lo, _mm512_set1_epi16(4));
    PLEXUS_Q_UNROLL for (int h = 0; h < 2; ++h) {
      const __m512i l = _mm512_loadu_si512(blk->ql + 64 * h);
      const __m512i hb = _mm512_broadcast_i64x4(load256(blk->qh + 32 * h));
      w.q[2 * h] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh_lo), m3), 4));
      w.q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                       _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh_hi), m3), 4));
    }
    pair_scales16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)), w.sc);
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    __m512i s = _mm512_setzero_si512();
    PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) {
      const __m512i x = _mm512_loadu_si512(xb + kXq + 64 * p);
      const __m512i x32 = _mm512_maddubs_epi16(_mm512_set1_epi8(32), x);  // the same for every row
      s = _mm512_dpwssd_epi32(s, _mm512_sub_epi16(_mm512_maddubs_epi16(w.q[p], x), x32), w.sc[p]);
    }
    const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s8), _mm256_mul_ps(w.d, _mm256_set1_ps(load_f32(xb))), a);
  }
};

// Q5_K for one token on 512-bit registers: Q4_KK512's pairs of sub-blocks, bit 4 of each value
// added where qh has it (sub-block j's bit j of qh[l]; both halves see the same 32 bytes of qh).
struct Q5_KK512 {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ5_K), kXBytes = sizeof(XBlock256);
  using W = Q4_KK512::W;
  static void load(const std::uint8_t* b, W& w) {
    Q4_KK512::load_scales(b, w);  // Q5_K's d, dmin and scales lie where Q4_K's do
    const BlockQ5_K* blk = reinterpret_cast<const BlockQ5_K*>(b);
    const __m512i m4 = _mm512_set1_epi8(15), k16 = _mm512_set1_epi8(16);
    const __m512i qh = _mm512_broadcast_i64x4(load256(blk->qh));
    PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) {
      const int j = Q4_KK512::kLo[p];
      const __m512i q = _mm512_loadu_si512(blk->qs + 64 * (p / 2));
      const __m512i lo = _mm512_and_si512(p % 2 == 0 ? q : _mm512_srli_epi16(q, 4), m4);
      const __m512i bit = join256(_mm256_set1_epi8(static_cast<char>(1 << j)), _mm256_set1_epi8(static_cast<char>(1 << (j + 2))));
      w.q[p] = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh, bit), lo, k16);
    }
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { Q4_KK512::acc(w, xb, a); }
};

// Shift counts of the 2-bit fields of Q3_K's and Q2_K's qs for chunk pair p = 2h + i (chunks
// 4h + 2i and 4h + 2i + 1: fields 2i and 2i + 1 of qs[32h + l]) in the two halves.
inline __m512i q2_field_shift(int p) {
  return join256(_mm256_set1_epi16(static_cast<short>(4 * (p % 2))), _mm256_set1_epi16(static_cast<short>(4 * (p % 2) + 2)));
}

// Q3_K for one token on 512-bit registers: Q6_KK512's chunk pairs, the values taken as q + 4
// (0..7, unsigned: the 2 bits of qs and bit 2 from hmask) through maddubs, 4 · (the pair sums of
// x) taken off in int16 (exact), then dpwssd with the 16-element scales sc − 32.
struct Q3_KK512 {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ3_K), kXBytes = sizeof(XBlock256);
  struct W {
    __m512i q[4];   // pair p: its 64 values q + 4, 0..7
    __m512i sc[4];  // as Q6_KK512::W's (pair_scales16)
    __m256 d;
  };
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ3_K* blk = reinterpret_cast<const BlockQ3_K*>(b);
    const __m512i m3 = _mm512_set1_epi8(3), k4 = _mm512_set1_epi8(4);
    const __m512i hm = _mm512_broadcast_i64x4(load256(blk->hmask));
    PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) {
      const int c = 2 * p;  // chunks c (low half) and c + 1 (high half)
      const __m512i q = _mm512_broadcast_i64x4(load256(blk->qs + 32 * (p / 2)));
      const __m512i q2 = _mm512_and_si512(_mm512_srlv_epi16(q, q2_field_shift(p)), m3);
      const __m512i bit = join256(_mm256_set1_epi8(static_cast<char>(1 << c)), _mm256_set1_epi8(static_cast<char>(1 << (c + 1))));
      w.q[p] = _mm512_mask_add_epi8(q2, _mm512_test_epi8_mask(hm, bit), q2, k4);
    }
    pair_scales16(q3_k_scales(blk->scales), w.sc);
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    __m512i s = _mm512_setzero_si512();
    PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) {
      const __m512i x = _mm512_loadu_si512(xb + kXq + 64 * p);
      const __m512i x4 = _mm512_maddubs_epi16(_mm512_set1_epi8(4), x);  // the same for every row
      s = _mm512_dpwssd_epi32(s, _mm512_sub_epi16(_mm512_maddubs_epi16(w.q[p], x), x4), w.sc[p]);
    }
    const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s8), _mm256_mul_ps(w.d, _mm256_set1_ps(load_f32(xb))), a);
  }
};

// Q2_K for one token on 512-bit registers: Q6_KK512's chunk pairs with the unsigned values 0..3
// straight through maddubs and dpwssd with the 4-bit scales; then the mins as in Q2_KK.
struct Q2_KK512 {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ2_K), kXBytes = sizeof(XBlock256);
  struct W {
    __m512i q[4];   // pair p: its 64 values, 0..3
    __m512i sc[4];  // as Q6_KK512::W's (pair_scales16)
    __m256i m;      // the 16 mins as int16
    __m256 d, dmin;
  };
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ2_K* blk = reinterpret_cast<const BlockQ2_K*>(b);
    const __m512i m3 = _mm512_set1_epi8(3);
    PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) {
      const __m512i q = _mm512_broadcast_i64x4(load256(blk->qs + 32 * (p / 2)));
      w.q[p] = _mm512_and_si512(_mm512_srlv_epi16(q, q2_field_shift(p)), m3);
    }
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales));
    const __m128i m4 = _mm_set1_epi8(15);
    pair_scales16(_mm_and_si128(s, m4), w.sc);
    w.m = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4));
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
    w.dmin = _mm256_set1_ps(_cvtsh_ss(blk->dmin));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    __m512i s = _mm512_setzero_si512();
    PLEXUS_Q_UNROLL for (int p = 0; p < 4; ++p) s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(w.q[p], _mm512_loadu_si512(xb + kXq + 64 * p)), w.sc[p]);
    const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    const __m256 xd = _mm256_set1_ps(load_f32(xb));
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s8), _mm256_mul_ps(w.d, xd), a);
    const __m256i mins = _mm256_madd_epi16(w.m, load256(xb + kXsums16));
    a = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(w.dmin, xd), a);
  }
};

// IQ4_XS for one token on 512-bit registers, a half h of 128 elements (sub-blocks 4h..4h + 3)
// at a time: one 64-byte load of qs gives the 4 sub-blocks' first 16 codes (low nibbles, one
// sub-block per 128-bit lane) and their last 16 (high nibbles); x is permuted to match (the
// permutes are shared by the tile's rows). The values' magnitudes |kIq4Values| go through maddubs
// with x negated where the value is negative (codes 0..7), then dpwssd with the scales ls − 32
// (sub-block 4h + k in 128-bit lane k). The lanes summed over the 128-bit lanes give S[0..3]
// (low nibbles) and S[4..7] (high nibbles), exact.
struct IQ4_XSK512 {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockIQ4_XS), kXBytes = sizeof(XBlock256);
  struct W {
    __m512i aw[4];     // 2h: half h's low-nibble values' magnitudes; 2h + 1: the high nibbles'
    __mmask64 neg[4];  // the negative values of aw[i]
    __m512i sc[2];     // half h: int16 lanes of 128-bit lane k hold ls[4h + k] − 32
    __m256 d;
  };
  static void load(const std::uint8_t* b, W& w) {
    const BlockIQ4_XS* blk = reinterpret_cast<const BlockIQ4_XS*>(b);
    const __m512i table = _mm512_broadcast_i32x4(_mm_abs_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values))));
    const __m512i m4 = _mm512_set1_epi8(15), k8 = _mm512_set1_epi8(8);
    PLEXUS_Q_UNROLL for (int h = 0; h < 2; ++h) {
      const __m512i q = _mm512_loadu_si512(blk->qs + 64 * h);
      const __m512i codes[2] = {_mm512_and_si512(q, m4), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4)};
      PLEXUS_Q_UNROLL for (int n = 0; n < 2; ++n) {
        w.aw[2 * h + n] = _mm512_shuffle_epi8(table, codes[n]);
        w.neg[2 * h + n] = _mm512_testn_epi8_mask(codes[n], k8);
      }
    }
    const __m512i sc16 = _mm512_broadcast_i32x4(iq4_xs_scales(blk));
    PLEXUS_Q_UNROLL for (int h = 0; h < 2; ++h) {
      const auto pick = [](int k) { return _mm256_castsi256_si128(int16_lane_picker(k)); };
      const int k = 4 * h;
      w.sc[h] = _mm512_shuffle_epi8(sc16, join256(_mm256_set_m128i(pick(k + 1), pick(k)), _mm256_set_m128i(pick(k + 3), pick(k + 2))));
    }
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    __m512i s[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};  // low nibbles, high nibbles
    PLEXUS_Q_UNROLL for (int h = 0; h < 2; ++h) {
      // 128-bit lanes L0..L7 of x (sub-block 4h + k: L2k its elements 0..15, L2k+1 16..31) as
      // [L0, L2, L4, L6] and [L1, L3, L5, L7] (the same for every row).
      const __m512i x0 = _mm512_loadu_si512(xb + kXq + 128 * h), x1 = _mm512_loadu_si512(xb + kXq + 128 * h + 64);
      const __m512i xs[2] = {_mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(3, 1, 3, 1))};
      PLEXUS_Q_UNROLL for (int n = 0; n < 2; ++n) {
        const __m512i sx = _mm512_mask_sub_epi8(xs[n], w.neg[2 * h + n], _mm512_setzero_si512(), xs[n]);
        s[n] = _mm512_dpwssd_epi32(s[n], _mm512_maddubs_epi16(w.aw[2 * h + n], sx), w.sc[h]);
      }
    }
    // Each register's four 128-bit lanes summed: S[0..3] from the low nibbles, S[4..7] the high.
    // t's 128-bit lanes: [lo0 + lo1, lo2 + lo3, hi0 + hi1, hi2 + hi3], reordered so its halves
    // are [lo0 + lo1, hi0 + hi1] and [lo2 + lo3, hi2 + hi3].
    __m512i t = _mm512_add_epi32(_mm512_shuffle_i64x2(s[0], s[1], _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_i64x2(s[0], s[1], _MM_SHUFFLE(3, 1, 3, 1)));
    t = _mm512_shuffle_i64x2(t, t, _MM_SHUFFLE(3, 1, 2, 0));
    const __m256i u = _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(u), _mm256_mul_ps(w.d, _mm256_set1_ps(load_f32(xb))), a);
  }
};

}  // namespace
}  // namespace plexus
