// Eight consecutive weights of a block-format span dequantised at once: the index math of the
// CUDA block kernels (GEMV from shared-memory tiles, the embedding gather, the prefill
// dequantisation), written once for host and device so the CPU tests check it against
// the oracle dequantize_row (kernels/ref). Layouts: block_formats.h. Plain C++ (g++ and nvcc).
#pragma once
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/block_formats.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define PLEXUS_HD __host__ __device__ __forceinline__
#else
#define PLEXUS_HD inline
#endif
#if defined(__CUDA_ARCH__)  // the device pass (the host compiler knows no unroll pragma)
#define PLEXUS_UNROLL _Pragma("unroll")
#else
#define PLEXUS_UNROLL
#endif

namespace plexus::blocks {

// The 2 bytes at p (p 2-byte aligned), little-endian.
PLEXUS_HD std::uint32_t load_u16(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const std::uint16_t*>(p);
#else
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
#endif
}

// The 8 bytes at p (p 2-byte aligned) into b[0..8).
PLEXUS_HD void load8(const std::uint8_t* p, std::uint32_t* b) {
PLEXUS_UNROLL
  for (int k = 0; k < 4; ++k) {
    const std::uint32_t v = load_u16(p + 2 * k);
    b[2 * k] = v & 0xffu;
    b[2 * k + 1] = v >> 8;
  }
}

PLEXUS_HD float half_to_f32(std::uint32_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
#else
  return f16_to_f32(static_cast<std::uint16_t>(h));
#endif
}

// float(u) - bias for u < 2^23: on the device a bit trick (an OR and an add at full rate, not the
// quarter-rate integer conversion); exact either way.
PLEXUS_HD float biased(std::uint32_t u, int bias) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(0x4B000000u | u) - (8388608.0f + static_cast<float>(bias));
#else
  return static_cast<float>(static_cast<int>(u) - bias);
#endif
}

// The float with bits b.
PLEXUS_HD float bits_float(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float f;
  std::memcpy(&f, &b, 4);
  return f;
#endif
}

// 1 + u / 2^bits for the bits-bit field u already in place at mantissa bits [23 - bits, 23): an OR.
PLEXUS_HD float one_plus(std::uint32_t placed) { return bits_float(0x3F800000u | placed); }

// Format tags: bytes and weights per block, blocks per GEMV tile (a whole number of 16-byte
// vectors, about 2 KiB; half a tile too, for the GEMV's several-rows shape), and
// dequant8(s, e, out): weights e..e+7 (e % 8 == 0) of the span of whole blocks starting at s
// (2-byte aligned) into out, the oracle's f32 expression of each (kernels/ref/dequantize.cpp).
// affine8(s, e, raw, a, b): the same weights as a * raw[k] + b exactly (in real arithmetic),
// raw[k] = 1 + u_k / 2^bits with u_k the weight's unsigned bits-bit code placed in 1.0's mantissa
// (a shift, a mask, an OR: no conversion), so a dot product takes a * sum(raw x) + b * sum(x): the
// GEMV's cheap form (one FMA a weight and token after a few integer operations a weight). u_k per
// format: Q8_0 the int8 + 128 (8 bits); Q4_0 / Q4_1 / Q4_K the nibble (4); Q5_0 / Q5_1 / Q5_K the
// 5-bit code; Q6_K the 6-bit code; Q3_K the 2 low bits with the hmask bit as bit 2 (3: q + 4);
// Q2_K the 2-bit code; IQ4_NL / IQ4_XS the grid value kIq4Values[code] + 128 (8 bits, 1..241);
// MXFP4 the doubled E2M1 value kMxfp4Values[code] + 12 (5 bits, 0..24).

// The 8 nibbles at bit `shift` (0 or 4) of bytes p[0..8) (p 2-byte aligned), each at bits
// [pos, pos + 4) of u[k] (12 <= pos <= 19).
PLEXUS_HD void place_nibbles8(const std::uint8_t* p, int shift, int pos, std::uint32_t* u) {
PLEXUS_UNROLL
  for (int k = 0; k < 4; ++k) {  // the nibble at bit 8 j + shift of the word -> bits [pos, pos + 4)
    const std::uint32_t v = load_u16(p + 2 * k);
    u[2 * k] = (v << (pos - shift)) & (15u << pos);
    u[2 * k + 1] = (v << (pos - 8 - shift)) & (15u << pos);
  }
}

// raw[k] = 1 + u_k / 16, u_k the nibble at bit `shift` (0 or 4) of byte k at p (p 2-byte aligned).
PLEXUS_HD void nibbles8(const std::uint8_t* p, int shift, float* raw) {
  std::uint32_t u[8];
  place_nibbles8(p, shift, 19, u);
PLEXUS_UNROLL
  for (int k = 0; k < 8; ++k) raw[k] = one_plus(u[k]);
}

// The codes of weights i..i+7 (i % 8 == 0) of a 32-weight block whose 16 bytes at qs hold
// weight l < 16 in the low nibble of qs[l] and weight l + 16 in the high one (Q4_0's packing).
PLEXUS_HD void block_nibbles8(const std::uint8_t* qs, int i, std::uint32_t* q) {
  load8(qs + (i & 15), q);
  const int shift = i >= 16 ? 4 : 0;
PLEXUS_UNROLL
  for (int k = 0; k < 8; ++k) q[k] = (q[k] >> shift) & 15u;
}

// The 4 bytes at p (p 2-byte aligned), little-endian.
PLEXUS_HD std::uint32_t load_u32(const std::uint8_t* p) { return load_u16(p) | (load_u16(p + 2) << 16); }

// Table t's 16 values plus bias (bytes 0..255) packed 4 to a word, word w holding codes
// 4w..4w+3 low byte first.
constexpr std::uint32_t table_word(const std::int8_t* t, int bias, int w) {
  std::uint32_t v = 0;
  for (int k = 0; k < 4; ++k) v |= static_cast<std::uint32_t>(t[4 * w + k] + bias) << (8 * k);
  return v;
}

// Byte q (a 4-bit code) of the 16 packed in the words w0..w3 (table_word): no table in memory.
PLEXUS_HD std::uint32_t table_byte(std::uint32_t q, std::uint32_t w0, std::uint32_t w1, std::uint32_t w2, std::uint32_t w3) {
#if defined(__CUDA_ARCH__)
  return __byte_perm((q & 8u) ? w2 : w0, (q & 8u) ? w3 : w1, q & 7u) & 0xffu;
#else
  const std::uint32_t w = (q & 8u) ? ((q & 4u) ? w3 : w2) : ((q & 4u) ? w1 : w0);
  return (w >> (8 * (q & 3u))) & 0xffu;
#endif
}

// kIq4Values[q] + 128 (1..241) for a 4-bit code q.
inline constexpr std::uint32_t kIq4Word0 = table_word(kIq4Values, 128, 0), kIq4Word1 = table_word(kIq4Values, 128, 1),
                               kIq4Word2 = table_word(kIq4Values, 128, 2), kIq4Word3 = table_word(kIq4Values, 128, 3);
PLEXUS_HD std::uint32_t iq4_biased(std::uint32_t q) { return table_byte(q, kIq4Word0, kIq4Word1, kIq4Word2, kIq4Word3); }

// kMxfp4Values[q] + 12 (0..24) for a 4-bit code q.
inline constexpr std::uint32_t kMxfp4Word0 = table_word(kMxfp4Values, 12, 0), kMxfp4Word1 = table_word(kMxfp4Values, 12, 1),
                               kMxfp4Word2 = table_word(kMxfp4Values, 12, 2), kMxfp4Word3 = table_word(kMxfp4Values, 12, 3);
PLEXUS_HD std::uint32_t mxfp4_biased(std::uint32_t q) { return table_byte(q, kMxfp4Word0, kMxfp4Word1, kMxfp4Word2, kMxfp4Word3); }

struct Q8_0 {
  static constexpr int kBytes = 34, kElems = 32, kTileBlocks = 64;  // 2176 bytes
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const int i = static_cast<int>(e % 32);
    const float d = half_to_f32(load_u16(p));
    std::uint32_t b[8];
    load8(p + 2 + i, b);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(b[k] ^ 0x80u, 128);  // int8 + 128
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const int i = static_cast<int>(e % 32);
    const float d = half_to_f32(load_u16(p));
PLEXUS_UNROLL
    for (int k = 0; k < 4; ++k) {  // byte q -> u = q ^ 0x80 (int8 + 128) at bits [15, 23)
      const std::uint32_t v = load_u16(p + 2 + i + 2 * k);
      raw[2 * k] = one_plus(((v << 15) & 0x007F8000u) ^ 0x00400000u);
      raw[2 * k + 1] = one_plus(((v << 7) & 0x007F8000u) ^ 0x00400000u);
    }
    *a = 256.0f * d;  // d (u - 128) = 256 d raw - 384 d
    *b = -384.0f * d;
  }
};

struct Q4_0 {
  static constexpr int kBytes = 18, kElems = 32, kTileBlocks = 128;  // 2304 bytes
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const int i = static_cast<int>(e % 32);  // 0, 8: low nibbles of qs[i..]; 16, 24: high of qs[i - 16..]
    const float d = half_to_f32(load_u16(p));
    std::uint32_t b[8];
    load8(p + 2 + (i & 15), b);
    const int shift = i >= 16 ? 4 : 0;
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased((b[k] >> shift) & 15u, 8);
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const int i = static_cast<int>(e % 32);
    const float d = half_to_f32(load_u16(p));
    nibbles8(p + 2 + (i & 15), i >= 16 ? 4 : 0, raw);
    *a = 16.0f * d;  // d (u - 8) = 16 d raw - 24 d
    *b = -24.0f * d;
  }
};

struct Q4_K {
  static constexpr int kBytes = 144, kElems = 256, kTileBlocks = 16;  // 2304 bytes
  // Sub-block j's scale d·sc[j] and min dmin·m[j] of the block at p (block_formats.h).
  static PLEXUS_HD void scale_min(const std::uint8_t* p, int j, float* d, float* m) {
    const std::uint8_t* sc = p + 4;
    int scale, min;
    if (j < 4) {
      scale = sc[j] & 63;
      min = sc[j + 4] & 63;
    } else {
      scale = (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4);
      min = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
    }
    *d = half_to_f32(load_u16(p)) * static_cast<float>(scale);
    *m = half_to_f32(load_u16(p + 2)) * static_cast<float>(min);
  }
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int j = i / 32, l = i % 32;  // sub-block j, its weight l
    float d, m;
    scale_min(p, j, &d, &m);
    std::uint32_t b[8];
    load8(p + 16 + 32 * (j / 2) + l, b);  // chunk j / 2: low nibbles for even j, high for odd
    const int shift = (j & 1) ? 4 : 0;
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased((b[k] >> shift) & 15u, 0) - m;
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int j = i / 32, l = i % 32;  // sub-block j, its weight l
    float d, m;
    scale_min(p, j, &d, &m);
    nibbles8(p + 16 + 32 * (j / 2) + l, (j & 1) ? 4 : 0, raw);
    *a = 16.0f * d;  // d u - m = 16 d raw - (16 d + m)
    *b = -(16.0f * d + m);
  }
};

struct Q6_K {
  static constexpr int kBytes = 210, kElems = 256, kTileBlocks = 8;  // 1680 bytes
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int h = i / 128, r = i % 128;  // half h, its weight r
    const int qq = r / 32, l = r % 32;   // quarter qq of the half, its weight l
    const float d = half_to_f32(load_u16(p + 208)) * static_cast<float>(static_cast<std::int8_t>(p[192 + 8 * h + r / 16]));
    std::uint32_t lo[8], hi[8];
    load8(p + 64 * h + 32 * (qq & 1) + l, lo);  // ql: quarters 0, 2 from ql[l], 1, 3 from ql[l + 32]
    load8(p + 128 + 32 * h + l, hi);            // qh[l]: 2 bits per quarter
    const int lshift = qq >= 2 ? 4 : 0, hshift = 2 * qq;
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) {
      out[k] = d * biased(((lo[k] >> lshift) & 15u) | (((hi[k] >> hshift) & 3u) << 4), 32);
    }
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int h = i / 128, r = i % 128;
    const int qq = r / 32, l = r % 32;
    const float d = half_to_f32(load_u16(p + 208)) * static_cast<float>(static_cast<std::int8_t>(p[192 + 8 * h + r / 16]));
    const std::uint8_t* lo = p + 64 * h + 32 * (qq & 1) + l;
    const std::uint8_t* hi = p + 128 + 32 * h + l;
    const int lshift = qq >= 2 ? 4 : 0, hshift = 2 * qq;
PLEXUS_UNROLL
    for (int k = 0; k < 4; ++k) {  // u = low nibble at bits [17, 21), its 2 high bits at [21, 23)
      const std::uint32_t v = load_u16(lo + 2 * k), w = load_u16(hi + 2 * k);
      raw[2 * k] = one_plus(((v << (17 - lshift)) & 0x001E0000u) | ((w << (21 - hshift)) & 0x00600000u));
      raw[2 * k + 1] = one_plus(((v << (9 - lshift)) & 0x001E0000u) | ((w << (13 - hshift)) & 0x00600000u));
    }
    *a = 64.0f * d;  // d (u - 32) = 64 d raw - 96 d
    *b = -96.0f * d;
  }
};

struct Q4_1 {
  static constexpr int kBytes = 20, kElems = 32, kTileBlocks = 96;  // 1920 bytes
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const float d = half_to_f32(load_u16(p)), m = half_to_f32(load_u16(p + 2));
    std::uint32_t q[8];
    block_nibbles8(p + 4, static_cast<int>(e % 32), q);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(q[k], 0) + m;
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const int i = static_cast<int>(e % 32);
    const float d = half_to_f32(load_u16(p)), m = half_to_f32(load_u16(p + 2));
    nibbles8(p + 4 + (i & 15), i >= 16 ? 4 : 0, raw);
    *a = 16.0f * d;  // d u + m = 16 d raw + (m - 16 d)
    *b = m - 16.0f * d;
  }
};

// Q5_0 / Q5_1: the 5-bit codes of weights i..i+7 (i % 8 == 0) of the block whose 32-bit qh is at
// qh and nibbles at qs: dequant8's integers (raw == nullptr) or affine8's raw (u at bits [18, 23)).
PLEXUS_HD void five_bit8(const std::uint8_t* qh, const std::uint8_t* qs, int i, std::uint32_t* q, float* raw) {
  const std::uint32_t high = load_u32(qh) >> i;  // bit k: bit 4 of weight i + k
  if (raw == nullptr) {
    block_nibbles8(qs, i, q);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) q[k] |= ((high >> k) & 1u) << 4;
    return;
  }
  place_nibbles8(qs + (i & 15), i >= 16 ? 4 : 0, 18, q);
PLEXUS_UNROLL
  for (int k = 0; k < 8; ++k) raw[k] = one_plus(q[k] | ((high << (22 - k)) & 0x00400000u));
}

struct Q5_0 {
  static constexpr int kBytes = 22, kElems = 32, kTileBlocks = 96;  // 2112 bytes
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const float d = half_to_f32(load_u16(p));
    std::uint32_t q[8];
    five_bit8(p + 2, p + 6, static_cast<int>(e % 32), q, nullptr);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(q[k], 16);
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const float d = half_to_f32(load_u16(p));
    std::uint32_t u[8];
    five_bit8(p + 2, p + 6, static_cast<int>(e % 32), u, raw);
    *a = 32.0f * d;  // d (u - 16) = 32 d raw - 48 d
    *b = -48.0f * d;
  }
};

struct Q5_1 {
  static constexpr int kBytes = 24, kElems = 32, kTileBlocks = 96;  // 2304 bytes
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const float d = half_to_f32(load_u16(p)), m = half_to_f32(load_u16(p + 2));
    std::uint32_t q[8];
    five_bit8(p + 4, p + 8, static_cast<int>(e % 32), q, nullptr);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(q[k], 0) + m;
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const float d = half_to_f32(load_u16(p)), m = half_to_f32(load_u16(p + 2));
    std::uint32_t u[8];
    five_bit8(p + 4, p + 8, static_cast<int>(e % 32), u, raw);
    *a = 32.0f * d;  // d u + m = 32 d raw + (m - 32 d)
    *b = m - 32.0f * d;
  }
};

struct IQ4_NL {
  static constexpr int kBytes = 18, kElems = 32, kTileBlocks = 128;  // 2304 bytes
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const float d = half_to_f32(load_u16(p));
    std::uint32_t q[8];
    block_nibbles8(p + 2, static_cast<int>(e % 32), q);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(iq4_biased(q[k]), 128);
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const float d = half_to_f32(load_u16(p));
    std::uint32_t q[8];
    block_nibbles8(p + 2, static_cast<int>(e % 32), q);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) raw[k] = one_plus(iq4_biased(q[k]) << 15);
    *a = 256.0f * d;  // d (u - 128) = 256 d raw - 384 d
    *b = -384.0f * d;
  }
};

// MXFP4's 17-byte blocks start at any byte: byte loads only (load8 and load_u16 need 2-byte
// alignment). The weights are kMxfp4Values times the half scale 2^(e − 128).
struct MXFP4 {
  static constexpr int kBytes = 17, kElems = 32, kTileBlocks = 128;  // 2176 bytes
  // The codes of weights e..e+7 (Q4_0's packing) into q; returns their block's half scale.
  static PLEXUS_HD float codes8(const std::uint8_t* s, std::int64_t e, std::uint32_t* q) {
    const std::uint8_t* p = s + (e / 32) * kBytes;
    const int i = static_cast<int>(e % 32);
    const std::uint8_t* qs = p + 1 + (i & 15);
    const int shift = i >= 16 ? 4 : 0;
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) q[k] = (static_cast<std::uint32_t>(qs[k]) >> shift) & 15u;
    return bits_float(mxfp4_half_scale_bits(p[0]));
  }
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    std::uint32_t q[8];
    const float d = codes8(s, e, q);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(mxfp4_biased(q[k]), 12);
  }
  // (a overflows f32 for e > 250, scales beyond 2^123: no checkpoint's.)
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    std::uint32_t q[8];
    const float d = codes8(s, e, q);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) raw[k] = one_plus(mxfp4_biased(q[k]) << 18);
    *a = 32.0f * d;  // d (u - 12) = 32 d raw - 44 d
    *b = -44.0f * d;
  }
};

// Q2_K and Q3_K: weight 128h + 32j + l of a super-block takes bits 2j of qs[32h + l].
struct Q2_K {
  static constexpr int kBytes = 84, kElems = 256, kTileBlocks = 24;  // 2016 bytes
  // The 16-weight sub-block s's scale d·sc[s] and min dmin·m[s] of the block at p.
  static PLEXUS_HD void scale_min(const std::uint8_t* p, int s, float* d, float* m) {
    *d = half_to_f32(load_u16(p + 80)) * static_cast<float>(p[s] & 15);
    *m = half_to_f32(load_u16(p + 82)) * static_cast<float>(p[s] >> 4);
  }
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int h = i / 128, j = (i % 128) / 32, l = i % 32;
    float d, m;
    scale_min(p, i / 16, &d, &m);
    std::uint32_t q[8];
    load8(p + 16 + 32 * h + l, q);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased((q[k] >> (2 * j)) & 3u, 0) - m;
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int h = i / 128, j = (i % 128) / 32, l = i % 32;
    float d, m;
    scale_min(p, i / 16, &d, &m);
    const std::uint8_t* qs = p + 16 + 32 * h + l;
PLEXUS_UNROLL
    for (int k = 0; k < 4; ++k) {  // the 2 bits at 2j of each byte -> bits [21, 23)
      const std::uint32_t v = load_u16(qs + 2 * k);
      raw[2 * k] = one_plus((v << (21 - 2 * j)) & 0x00600000u);
      raw[2 * k + 1] = one_plus((v << (13 - 2 * j)) & 0x00600000u);
    }
    *a = 4.0f * d;  // d u - m = 4 d raw - (4 d + m)
    *b = -(4.0f * d + m);
  }
};

struct Q3_K {
  static constexpr int kBytes = 110, kElems = 256, kTileBlocks = 16;  // 1760 bytes
  // The 16-weight sub-block s's scale d·(sc[s] − 32) of the block at p (block_formats.h).
  static PLEXUS_HD float scale(const std::uint8_t* p, int s) {
    const std::uint8_t* sc = p + 96;
    const int low = s < 8 ? sc[s] & 15 : sc[s - 8] >> 4;
    const int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    return half_to_f32(load_u16(p + 108)) * static_cast<float>((low | (high << 4)) - 32);
  }
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int h = i / 128, j = (i % 128) / 32, l = i % 32;
    const float d = scale(p, i / 16);
    std::uint32_t q[8], hm[8];
    load8(p + 32 + 32 * h + l, q);
    load8(p + l, hm);
    const int hb = 4 * h + j;  // the hmask bit of these weights: set, q unchanged; clear, q − 4
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(((q[k] >> (2 * j)) & 3u) | (((hm[k] >> hb) & 1u) << 2), 4);
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int h = i / 128, j = (i % 128) / 32, l = i % 32;
    const float d = scale(p, i / 16);
    const std::uint8_t* qs = p + 32 + 32 * h + l;
    const std::uint8_t* hm = p + l;
    const int hb = 4 * h + j;
PLEXUS_UNROLL
    for (int k = 0; k < 4; ++k) {  // u = q + 4: the 2 low bits at [20, 22), the hmask bit at 22
      const std::uint32_t v = load_u16(qs + 2 * k), w = load_u16(hm + 2 * k);
      raw[2 * k] = one_plus(((v << (20 - 2 * j)) & 0x00300000u) | ((w << (22 - hb)) & 0x00400000u));
      raw[2 * k + 1] = one_plus(((v << (12 - 2 * j)) & 0x00300000u) | ((w << (14 - hb)) & 0x00400000u));
    }
    *a = 8.0f * d;  // d (u - 4) = 8 d raw - 12 d
    *b = -12.0f * d;
  }
};

struct Q5_K {
  static constexpr int kBytes = 176, kElems = 256, kTileBlocks = 12;  // 2112 bytes
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int j = i / 32, l = i % 32;  // sub-block j, its weight l
    float d, m;
    Q4_K::scale_min(p, j, &d, &m);  // d, dmin and the scales sit where Q4_K's do
    std::uint32_t lo[8], hi[8];
    load8(p + 48 + 32 * (j / 2) + l, lo);  // chunk j / 2: low nibbles for even j, high for odd
    load8(p + 16 + l, hi);                 // qh[l]: bit j is bit 4 of the code
    const int shift = (j & 1) ? 4 : 0;
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(((lo[k] >> shift) & 15u) | (((hi[k] >> j) & 1u) << 4), 0) - m;
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const int j = i / 32, l = i % 32;
    float d, m;
    Q4_K::scale_min(p, j, &d, &m);
    std::uint32_t u[8];
    place_nibbles8(p + 48 + 32 * (j / 2) + l, (j & 1) ? 4 : 0, 18, u);
    const std::uint8_t* hi = p + 16 + l;
PLEXUS_UNROLL
    for (int k = 0; k < 4; ++k) {  // bit j of qh[l] -> bit 22
      const std::uint32_t w = load_u16(hi + 2 * k);
      raw[2 * k] = one_plus(u[2 * k] | ((w << (22 - j)) & 0x00400000u));
      raw[2 * k + 1] = one_plus(u[2 * k + 1] | ((w << (14 - j)) & 0x00400000u));
    }
    *a = 32.0f * d;  // d u - m = 32 d raw - (32 d + m)
    *b = -(32.0f * d + m);
  }
};

struct IQ4_XS {
  static constexpr int kBytes = 136, kElems = 256, kTileBlocks = 16;  // 2176 bytes
  // Sub-block j's scale d·(ls[j] − 32) of the block at p (block_formats.h).
  static PLEXUS_HD float scale(const std::uint8_t* p, int j) {
    const int ls = ((p[4 + j / 2] >> (4 * (j % 2))) & 15) | static_cast<int>(((load_u16(p + 2) >> (2 * j)) & 3u) << 4);
    return half_to_f32(load_u16(p)) * static_cast<float>(ls - 32);
  }
  static PLEXUS_HD void dequant8(const std::uint8_t* s, std::int64_t e, float* out) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const float d = scale(p, i / 32);
    std::uint32_t q[8];
    block_nibbles8(p + 8 + 16 * (i / 32), i % 32, q);  // sub-block j's 16 bytes, Q4_0's packing
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = d * biased(iq4_biased(q[k]), 128);
  }
  static PLEXUS_HD void affine8(const std::uint8_t* s, std::int64_t e, float* raw, float* a, float* b) {
    const std::uint8_t* p = s + (e / 256) * kBytes;
    const int i = static_cast<int>(e % 256);
    const float d = scale(p, i / 32);
    std::uint32_t q[8];
    block_nibbles8(p + 8 + 16 * (i / 32), i % 32, q);
PLEXUS_UNROLL
    for (int k = 0; k < 8; ++k) raw[k] = one_plus(iq4_biased(q[k]) << 15);
    *a = 256.0f * d;  // d (u - 128) = 256 d raw - 384 d
    *b = -384.0f * d;
  }
};

// Calls fn(Tag{}) with the tag of block format t (host code: the kernels' launch switches and
// tests); returns false, calling nothing, for the element types (f32, bf16, f16).
template <typename Fn>
bool with_block_tag(DType t, Fn&& fn) {
  switch (t) {
    case DType::kQ8_0: fn(Q8_0{}); return true;
    case DType::kQ4_0: fn(Q4_0{}); return true;
    case DType::kQ4_1: fn(Q4_1{}); return true;
    case DType::kQ5_0: fn(Q5_0{}); return true;
    case DType::kQ5_1: fn(Q5_1{}); return true;
    case DType::kIQ4_NL: fn(IQ4_NL{}); return true;
    case DType::kQ2_K: fn(Q2_K{}); return true;
    case DType::kQ3_K: fn(Q3_K{}); return true;
    case DType::kQ4_K: fn(Q4_K{}); return true;
    case DType::kQ5_K: fn(Q5_K{}); return true;
    case DType::kQ6_K: fn(Q6_K{}); return true;
    case DType::kIQ4_XS: fn(IQ4_XS{}); return true;
    case DType::kMXFP4: fn(MXFP4{}); return true;
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: break;
  }
  return false;
}

// Each tag's block size is the layout's, and its tiles (whole, and halved where the GEMV halves
// them: all but Q6_K) are whole 16-byte vectors.
template <typename F, typename Block>
constexpr bool tag_fits(bool halves = true) {
  return F::kBytes == sizeof(Block) && F::kTileBlocks * F::kBytes % 16 == 0 &&
         (!halves || F::kTileBlocks / 2 * F::kBytes % 16 == 0);
}
static_assert(tag_fits<Q8_0, BlockQ8_0>() && tag_fits<Q4_0, BlockQ4_0>() && tag_fits<Q4_1, BlockQ4_1>());
static_assert(tag_fits<Q5_0, BlockQ5_0>() && tag_fits<Q5_1, BlockQ5_1>() && tag_fits<IQ4_NL, BlockIQ4_NL>());
static_assert(tag_fits<Q2_K, BlockQ2_K>() && tag_fits<Q3_K, BlockQ3_K>() && tag_fits<Q4_K, BlockQ4_K>());
static_assert(tag_fits<Q5_K, BlockQ5_K>() && tag_fits<Q6_K, BlockQ6_K>(false) && tag_fits<IQ4_XS, BlockIQ4_XS>());
static_assert(tag_fits<MXFP4, BlockMXFP4>());
static_assert(kIq4Word0 == 0x3F2D1801u);    // kIq4Values[0..4) + 128 = 1, 24, 45, 63
static_assert(kMxfp4Word1 == 0x18141210u);  // kMxfp4Values[4..8) + 12 = 16, 18, 20, 24

}  // namespace plexus::blocks
