// The x86 quantised dot kernels' block formats (order: quant_kernels.h), included (through
// quant_dispatch_x86.h) by the AVX2 file and the AVX-512 VNNI file, each compiling it with its
// own flags (internal linkage keeps the copies apart). Signed weights w times activations q run
// as |w| · sign(q, w) (u8 · s8), unsigned ones (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) as they are: AVX2
// with maddubs (pairs stay below 2^15) then madd into 8 int32 lanes of 4 elements; VNNI with
// dpbusd straight into those lanes, and dpwssd for madd-and-add. The integer lanes are exact
// either way. Define PLEXUS_Q_VNNI (0 or 1) and include <immintrin.h> first.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/block_formats.h"
#include "kernels/cpu/quant_kernels.h"
#include "kernels/cpu/quant_tile.h"
#include "kernels/cpu/quant_x.h"

namespace plexus {
namespace {

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline float load_f16(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}
inline float load_f32(const std::uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// Lanes of 4 products w·q, w signed bytes given as |w| and w.
inline __m256i dot4_signed(__m256i aw, __m256i w, __m256i q) {
#if PLEXUS_Q_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, _mm256_sign_epi8(q, w));
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(q, w)), _mm256_set1_epi16(1));
#endif
}

// Lanes of 4 products w·q, w unsigned bytes below 128.
inline __m256i dot4_unsigned(__m256i w, __m256i q) {
#if PLEXUS_Q_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, q);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, q), _mm256_set1_epi16(1));
#endif
}

// s + pairs of int16 products p16·sc summed into int32 lanes.
inline __m256i add_madd16(__m256i s, __m256i p16, __m256i sc) {
#if PLEXUS_Q_VNNI
  return _mm256_dpwssd_epi32(s, p16, sc);
#else
  return _mm256_add_epi32(s, _mm256_madd_epi16(p16, sc));
#endif
}

// Byte i of the 32 nibbles of a block of 32 (Q4_0's packing, block_formats.h) is element i.
inline __m256i nibbles32(const std::uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m4 = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

// Byte i is 0xFF where bit i of the little-endian 32-bit word at p is set, else 0 (Q5_0's qh).
inline __m256i bits_to_bytes(const std::uint8_t* p) {
  std::uint32_t h;
  std::memcpy(&h, p, 4);
  const __m256i pick = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(h)), pick);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

// A 16-value table (kIq4Values, kMxfp4Values) in both 128-bit lanes: _mm256_shuffle_epi8 of it with
// 4-bit codes gives their values.
inline __m256i table16(const std::int8_t* values) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
}

// One block of 32 signed weights: acc += float(lanes) · (d_w · d_x).
struct Block32W {
  __m256i aw, w;
  __m256 d;
};
inline void block32_acc(const Block32W& w, const std::uint8_t* xb, __m256& acc) {
  const __m256i p = dot4_signed(w.aw, w.w, load256(xb + 4));
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(w.d, _mm256_set1_ps(load_f32(xb))), acc);
}

struct Q8_0K {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ8_0), kXBytes = sizeof(XBlock32);
  using W = Block32W;
  static void load(const std::uint8_t* b, W& w) {
    w.w = load256(b + 2);
    w.aw = _mm256_abs_epi8(w.w);
    w.d = _mm256_set1_ps(load_f16(b));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { block32_acc(w, xb, a); }
};

struct Q4_0K {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ4_0), kXBytes = sizeof(XBlock32);
  using W = Block32W;
  static void load(const std::uint8_t* b, W& w) {
    w.w = _mm256_sub_epi8(nibbles32(b + 2), _mm256_set1_epi8(8));
    w.aw = _mm256_abs_epi8(w.w);
    w.d = _mm256_set1_ps(load_f16(b));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { block32_acc(w, xb, a); }
};

// Q5_0: the nibbles with bit 4 from qh, minus 16 (bit clear: − 16, set: − 0).
struct Q5_0K {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ5_0), kXBytes = sizeof(XBlock32);
  using W = Block32W;
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ5_0* blk = reinterpret_cast<const BlockQ5_0*>(b);
    w.w = _mm256_sub_epi8(nibbles32(blk->qs), _mm256_andnot_si256(bits_to_bytes(blk->qh), _mm256_set1_epi8(16)));
    w.aw = _mm256_abs_epi8(w.w);
    w.d = _mm256_set1_ps(load_f16(b));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { block32_acc(w, xb, a); }
};

// IQ4_NL: the codes' values looked up in kIq4Values.
struct IQ4_NLK {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockIQ4_NL), kXBytes = sizeof(XBlock32);
  using W = Block32W;
  static void load(const std::uint8_t* b, W& w) {
    w.w = _mm256_shuffle_epi8(table16(kIq4Values), nibbles32(b + 2));
    w.aw = _mm256_abs_epi8(w.w);
    w.d = _mm256_set1_ps(load_f16(b));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { block32_acc(w, xb, a); }
};

// MXFP4: IQ4_NL's shape, the codes' doubled E2M1 values from kMxfp4Values, d = 2^(e − 128).
struct MXFP4K {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockMXFP4), kXBytes = sizeof(XBlock32);
  using W = Block32W;
  static void load(const std::uint8_t* b, W& w) {
    w.w = _mm256_shuffle_epi8(table16(kMxfp4Values), nibbles32(b + 1));
    w.aw = _mm256_abs_epi8(w.w);
    w.d = _mm256_set1_ps(mxfp4_half_scale(b[0]));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { block32_acc(w, xb, a); }
};

// One block of 32 unsigned weights q with an offset (Q4_1, Q5_1): acc += float(q·x lanes) ·
// (d_w · d_x), then acc += float(x lanes) · (m_w · d_x).
struct Block32U {
  __m256i q;
  __m256 d, m;
};
inline void block32_offset_acc(const Block32U& w, const std::uint8_t* xb, __m256& acc) {
  const __m256i q = load256(xb + 4);
  const __m256 xd = _mm256_set1_ps(load_f32(xb));
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4_unsigned(w.q, q)), _mm256_mul_ps(w.d, xd), acc);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4_unsigned(_mm256_set1_epi8(1), q)), _mm256_mul_ps(w.m, xd), acc);
}

struct Q4_1K {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ4_1), kXBytes = sizeof(XBlock32);
  using W = Block32U;
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ4_1* blk = reinterpret_cast<const BlockQ4_1*>(b);
    w.q = nibbles32(blk->qs);
    w.d = _mm256_set1_ps(load_f16(b));
    w.m = _mm256_set1_ps(load_f16(b + 2));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { block32_offset_acc(w, xb, a); }
};

struct Q5_1K {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ5_1), kXBytes = sizeof(XBlock32);
  using W = Block32U;
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ5_1* blk = reinterpret_cast<const BlockQ5_1*>(b);
    w.q = _mm256_or_si256(nibbles32(blk->qs), _mm256_and_si256(bits_to_bytes(blk->qh), _mm256_set1_epi8(16)));
    w.d = _mm256_set1_ps(load_f16(b));
    w.m = _mm256_set1_ps(load_f16(b + 2));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { block32_offset_acc(w, xb, a); }
};

constexpr std::int64_t kXq = offsetof(XBlock256, q), kXsums = offsetof(XBlock256, sums);

// Byte j of each 128-bit lane: int16 lane k's bytes (2k, 2k + 1), for broadcasting int16 lane k.
inline __m256i int16_lane_picker(int k) { return _mm256_set1_epi16(static_cast<short>((2 * k) | ((2 * k + 1) << 8))); }

// Q4_K's (and Q5_K's) 6-bit scales and mins (block_formats.h): byte j of sc8 is sc[j], of m8 is
// m[j]. Computed 4 at a time in 32-bit words: bytes 0..3 (a), 4..7 (b), 8..11 (c) of `scales`.
inline void q4_k_scales_mins8(const std::uint8_t* scales, std::uint64_t& sc8, std::uint64_t& m8) {
  std::uint32_t a, b, c;
  std::memcpy(&a, scales, 4);
  std::memcpy(&b, scales + 4, 4);
  std::memcpy(&c, scales + 8, 4);
  sc8 = (a & 0x3f3f3f3fu) | static_cast<std::uint64_t>((c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u)) << 32;
  m8 = (b & 0x3f3f3f3fu) | static_cast<std::uint64_t>(((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u)) << 32;
}

struct Q4_KK {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ4_K), kXBytes = sizeof(XBlock256);
  using Wide = Q4_KK;  // prefill: acc_tile on the unpacked W
  struct W {
    __m256i q[8];   // sub-block j's 32 nibbles, 0..15
    __m256i sc[8];  // sc[j] in every int16 lane
    __m256i m;      // m[j] in int32 lane j
    __m256 d, dmin;
  };
  // The scales, mins, d and dmin, the same in Q4_K and Q5_K.
  static void load_scales(const std::uint8_t* b, W& w) {
    const BlockQ4_K* blk = reinterpret_cast<const BlockQ4_K*>(b);
    std::uint64_t sc8, m8;
    q4_k_scales_mins8(blk->scales, sc8, m8);
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc8))));
    PLEXUS_Q_UNROLL for (int j = 0; j < 8; ++j) w.sc[j] = _mm256_shuffle_epi8(sc16, int16_lane_picker(j));
    w.m = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(m8)));
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
    w.dmin = _mm256_set1_ps(_cvtsh_ss(blk->dmin));
  }
  static void load(const std::uint8_t* b, W& w) {
    load_scales(b, w);
    const BlockQ4_K* blk = reinterpret_cast<const BlockQ4_K*>(b);
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int c4 = 0; c4 < 4; ++c4) {
      const __m256i q = load256(blk->qs + 32 * c4);
      w.q[2 * c4] = _mm256_and_si256(q, m4);
      w.q[2 * c4 + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    }
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    __m256i s = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i p16 = _mm256_maddubs_epi16(w.q[j], load256(xb + kXq + 32 * j));
      s = add_madd16(s, p16, w.sc[j]);
    }
    const __m256 xd = _mm256_set1_ps(load_f32(xb));
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(w.d, xd), a);
    // m[j] · sums[j]: int16 pairs (m[j], 0) times (sums[j], its sign) — exact.
    const __m256i sums = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb + kXsums)));
    a = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(w.m, sums)), _mm256_mul_ps(w.dmin, xd), a);
  }
  // acc for NR rows × NT tokens (x blocks ldx bytes apart): the same integers and f32 steps.
  template <int NT, int NR>
  static void acc_tile(const W* const (&w)[NR], const std::uint8_t* xb, std::int64_t ldx, __m256 (&a)[NT][NR]) {
    __m256i s[NT][NR];
    PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
      PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) s[t][r] = _mm256_setzero_si256();
    }
    PLEXUS_Q_UNROLL for (int j = 0; j < 8; ++j) {
      PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) {
        const __m256i q = w[r]->q[j], sc = w[r]->sc[j];
        PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
          s[t][r] = add_madd16(s[t][r], _mm256_maddubs_epi16(q, load256(xb + t * ldx + kXq + 32 * j)), sc);
        }
      }
    }
    PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
      const std::uint8_t* xt = xb + t * ldx;
      const __m256 xd = _mm256_set1_ps(load_f32(xt));
      const __m256i sums = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xt + kXsums)));
      PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) {
        a[t][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t][r]), _mm256_mul_ps(w[r]->d, xd), a[t][r]);
        a[t][r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(w[r]->m, sums)), _mm256_mul_ps(w[r]->dmin, xd), a[t][r]);
      }
    }
  }
};

// The int16 scales of the 8 chunks of 32 from the 16 signed scales of 16 elements (bytes of s8):
// chunk c's int16 lanes 0..7 (its elements 0..15) hold s8[2c], lanes 8..15 hold s8[2c + 1].
inline void chunk_scales16(__m128i s8, __m256i* sc) {
  // scales as int16, 0..7 and 8..15 each in both 128-bit lanes; chunk c picks int16 lane
  // 2c mod 8 into its low lane and the next into its high lane.
  const __m256i lo = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(s8));
  const __m256i hi = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_srli_si128(s8, 8)));
  PLEXUS_Q_UNROLL for (int c = 0; c < 8; ++c) {
    const int k = 2 * (c & 3);
    const __m256i pick = _mm256_set_m128i(_mm_set1_epi16(static_cast<short>((2 * k + 2) | ((2 * k + 3) << 8))),
                                          _mm_set1_epi16(static_cast<short>((2 * k) | ((2 * k + 1) << 8))));
    sc[c] = _mm256_shuffle_epi8(c < 4 ? lo : hi, pick);
  }
}

// Q3_K's 16 scales sc[s] − 32 (−32..31) as signed bytes (block_formats.h): 32-bit words
// a, b, c = bytes 0..3, 4..7, 8..11 of `scales`; word k of the result (s = 4k..4k + 3) has low
// 4 bits from [a, b, a >> 4, b >> 4][k] and high 2 bits from c >> 2k.
inline __m128i q3_k_scales(const std::uint8_t* scales) {
  std::uint32_t c;
  std::memcpy(&c, scales + 8, 4);
  const __m128i ab = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales));
  const __m128i low = _mm_and_si128(_mm_unpacklo_epi64(ab, _mm_srli_epi32(ab, 4)), _mm_set1_epi8(15));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(c)), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi32(high, 4)), _mm_set1_epi8(32));
}

// IQ4_XS's 8 scales ls[j] − 32 (−32..31) as int16 (block_formats.h): ls[j]'s low 4 bits are bits
// 4j..4j + 3 of the 32-bit word scales_l, its high 2 bits bits 2j, 2j + 1 of scales_h.
inline __m128i iq4_xs_scales(const BlockIQ4_XS* blk) {
  std::uint32_t l;
  std::memcpy(&l, blk->scales_l, 4);
  const __m256i low = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(l)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                       _mm256_set1_epi32(15));
  const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(blk->scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                        _mm256_set1_epi32(3));
  const __m256i s = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
  return _mm_packs_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

// Prefill's form of the signed super-block formats (Q6_K, Q3_K, IQ4_XS), for acc_tile: each
// weight times its 16-element scale as int16 (|w · sc| ≤ 4096: Q6_K 32 · 128, IQ4_XS 127 · 32),
// x's even and odd bytes as int16 (two shifts per token shared by the tile's rows), and per chunk
// two madds of pairs give the lanes of S (lane l: elements 4l, 4l + 2 from the even, 4l + 1,
// 4l + 3 from the odd) — the same integers as F::acc without its sign step per token and row.
struct Signed16W {
  __m256i e[8], o[8];  // chunk c: int16 slot k = element 2k (e), 2k + 1 (o) times its scale
  __m256 d;
};
template <class F>
struct Signed16 {
  using W = Signed16W;
  static constexpr std::int64_t kXBytes = sizeof(XBlock256);
  static void load(const std::uint8_t* b, W& w) {
    typename F::W v;
    F::load(b, v);
    PLEXUS_Q_UNROLL for (int c = 0; c < 8; ++c) {
      w.e[c] = _mm256_mullo_epi16(_mm256_srai_epi16(_mm256_slli_epi16(v.w[c], 8), 8), v.sc[c]);
      w.o[c] = _mm256_mullo_epi16(_mm256_srai_epi16(v.w[c], 8), v.sc[c]);
    }
    w.d = v.d;
  }
  // F::acc for NR rows × NT tokens (x blocks ldx bytes apart): the same integers and f32 steps.
  template <int NT, int NR>
  static void acc_tile(const W* const (&w)[NR], const std::uint8_t* xb, std::int64_t ldx, __m256 (&a)[NT][NR]) {
    __m256i s[NT][NR];
    PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
      PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) s[t][r] = _mm256_setzero_si256();
    }
    PLEXUS_Q_UNROLL for (int c = 0; c < 8; ++c) {
      PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i q = load256(xb + t * ldx + kXq + 32 * c);
        const __m256i xe = _mm256_srai_epi16(_mm256_slli_epi16(q, 8), 8), xo = _mm256_srai_epi16(q, 8);
        PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) {
          s[t][r] = add_madd16(add_madd16(s[t][r], xe, w[r]->e[c]), xo, w[r]->o[c]);
        }
      }
    }
    PLEXUS_Q_UNROLL for (int t = 0; t < NT; ++t) {
      const __m256 xd = _mm256_set1_ps(load_f32(xb + t * ldx));
      PLEXUS_Q_UNROLL for (int r = 0; r < NR; ++r) {
        a[t][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t][r]), _mm256_mul_ps(w[r]->d, xd), a[t][r]);
      }
    }
  }
};

struct Q6_KK {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ6_K), kXBytes = sizeof(XBlock256);
  struct W {
    __m256i w[8], aw[8];  // chunk c's 32 weights q − 32, and their magnitudes
    __m256i sc[8];        // int16 lanes 0..7: scales[2c]; 8..15: scales[2c + 1]
    __m256 d;
  };
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(b);
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(blk->ql + 64 * h), ql1 = load256(blk->ql + 64 * h + 32);
      const __m256i qh = load256(blk->qh + 32 * h);
      const __m256i v[4] = {
          _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4)),
          _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4))};
      for (int k = 0; k < 4; ++k) {
        w.w[4 * h + k] = _mm256_sub_epi8(v[k], k32);
        w.aw[4 * h + k] = _mm256_abs_epi8(w.w[4 * h + k]);
      }
    }
    chunk_scales16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)), w.sc);
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    __m256i s = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) {
      const __m256i q = load256(xb + kXq + 32 * c);
      const __m256i p16 = _mm256_maddubs_epi16(w.aw[c], _mm256_sign_epi8(q, w.w[c]));
      s = add_madd16(s, p16, w.sc[c]);
    }
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(w.d, _mm256_set1_ps(load_f32(xb))), a);
  }
  using Wide = Signed16<Q6_KK>;
};

// Q5_K: Q4_K's shape with bit 4 of each value from qh (values 0..31: maddubs pairs stay below
// 2^13).
struct Q5_KK {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ5_K), kXBytes = sizeof(XBlock256);
  using W = Q4_KK::W;
  static void load(const std::uint8_t* b, W& w) {
    Q4_KK::load_scales(b, w);  // Q5_K's d, dmin and scales lie where Q4_K's do
    const BlockQ5_K* blk = reinterpret_cast<const BlockQ5_K*>(b);
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256i qh = load256(blk->qh);
    PLEXUS_Q_UNROLL for (int j = 0; j < 8; ++j) {
      const __m256i q = load256(blk->qs + 32 * (j / 2));
      const __m256i lo = _mm256_and_si256(j % 2 == 0 ? q : _mm256_srli_epi16(q, 4), m4);
      w.q[j] = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, j), one), 4));
    }
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { Q4_KK::acc(w, xb, a); }
  using Wide = Q5_KK;  // prefill: Q4_K's acc_tile on the unpacked W
  template <int NT, int NR>
  static void acc_tile(const W* const (&w)[NR], const std::uint8_t* xb, std::int64_t ldx, __m256 (&a)[NT][NR]) {
    Q4_KK::acc_tile<NT, NR>(w, xb, ldx, a);
  }
};

// Q3_K: Q6_K's shape (signed values, 16-element scales) with values −4..3 and scales sc − 32.
struct Q3_KK {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ3_K), kXBytes = sizeof(XBlock256);
  using W = Q6_KK::W;
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ3_K* blk = reinterpret_cast<const BlockQ3_K*>(b);
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), k4 = _mm256_set1_epi8(4);
    const __m256i hm = load256(blk->hmask);
    PLEXUS_Q_UNROLL for (int c = 0; c < 8; ++c) {  // chunk c = 4h + j: elements 128h + 32j + l
      const __m256i q = load256(blk->qs + 32 * (c / 4));
      const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c % 4)), m3);
      const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, c), one);
      w.w[c] = _mm256_sub_epi8(_mm256_or_si256(q2, _mm256_slli_epi16(hb, 2)), k4);
      w.aw[c] = _mm256_abs_epi8(w.w[c]);
    }
    chunk_scales16(q3_k_scales(blk->scales), w.sc);
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { Q6_KK::acc(w, xb, a); }
  using Wide = Signed16<Q3_KK>;
};

// IQ4_XS: Q6_K's shape with the codes' kIq4Values and scales ls − 32 (both halves of a chunk
// share its scale, as in Q4_KK).
struct IQ4_XSK {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockIQ4_XS), kXBytes = sizeof(XBlock256);
  using W = Q6_KK::W;
  static void load(const std::uint8_t* b, W& w) {
    const BlockIQ4_XS* blk = reinterpret_cast<const BlockIQ4_XS*>(b);
    const __m256i table = table16(kIq4Values);
    PLEXUS_Q_UNROLL for (int j = 0; j < 8; ++j) {
      w.w[j] = _mm256_shuffle_epi8(table, nibbles32(blk->qs + 16 * j));
      w.aw[j] = _mm256_abs_epi8(w.w[j]);
    }
    const __m256i sc16 = _mm256_broadcastsi128_si256(iq4_xs_scales(blk));
    PLEXUS_Q_UNROLL for (int j = 0; j < 8; ++j) w.sc[j] = _mm256_shuffle_epi8(sc16, int16_lane_picker(j));
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) { Q6_KK::acc(w, xb, a); }
  using Wide = Signed16<IQ4_XSK>;
};

constexpr std::int64_t kXsums16 = offsetof(XBlock256, sums16);

// Q2_K: Q6_K's shape with unsigned values 0..3 (maddubs takes them as they are), unsigned
// 4-bit scales, then the mins: madd of the 16 int16 mins with sums16 gives M[l] directly.
struct Q2_KK {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ2_K), kXBytes = sizeof(XBlock256);
  struct W {
    __m256i q[8];   // chunk c's 32 values, 0..3
    __m256i sc[8];  // as Q6_KK::W's
    __m256i m;      // the 16 mins as int16
    __m256 d, dmin;
  };
  static void load(const std::uint8_t* b, W& w) {
    const BlockQ2_K* blk = reinterpret_cast<const BlockQ2_K*>(b);
    const __m256i m3 = _mm256_set1_epi8(3);
    PLEXUS_Q_UNROLL for (int c = 0; c < 8; ++c) {  // chunk c = 4h + j: elements 128h + 32j + l
      w.q[c] = _mm256_and_si256(_mm256_srli_epi16(load256(blk->qs + 32 * (c / 4)), 2 * (c % 4)), m3);
    }
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales));
    const __m128i m4 = _mm_set1_epi8(15);
    chunk_scales16(_mm_and_si128(s, m4), w.sc);
    w.m = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4));
    w.d = _mm256_set1_ps(_cvtsh_ss(blk->d));
    w.dmin = _mm256_set1_ps(_cvtsh_ss(blk->dmin));
  }
  static void acc(const W& w, const std::uint8_t* xb, __m256& a) {
    __m256i s = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) s = add_madd16(s, _mm256_maddubs_epi16(w.q[c], load256(xb + kXq + 32 * c)), w.sc[c]);
    const __m256 xd = _mm256_set1_ps(load_f32(xb));
    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(w.d, xd), a);
    const __m256i mins = _mm256_madd_epi16(w.m, load256(xb + kXsums16));
    a = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(w.dmin, xd), a);
  }
};

}  // namespace
}  // namespace plexus
