// Eight consecutive weights of a block-format span dequantised at once: the index math of the
// CUDA block kernels (GEMV from shared-memory tiles, the embedding gather, the prefill
// dequantisation), written once for host and device so the CPU tests check it against
// quantize.cpp's dequantize_row. Layouts: block_formats.h. Plain C++ (compiles with g++ and nvcc).
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
// vectors, about 2 KiB), and dequant8(s, e, out): weights e..e+7 (e % 8 == 0) of the span of
// whole blocks starting at s (2-byte aligned) into out. affine8(s, e, raw, a, b): the same weights
// as a * raw[k] + b, raw[k] = 1 + u_k / 2^bits exactly (u_k the weight's unsigned bits-bit code;
// each a shift and a mask, no conversion), so a dot product takes a * sum(raw x) + b * sum(x): the
// GEMV's cheap form (one FMA a weight and token after two integer operations a weight).
// raw[k] = 1 + u_k / 16, u_k the nibble at bit `shift` (0 or 4) of byte k at p (p 2-byte aligned).
PLEXUS_HD void nibbles8(const std::uint8_t* p, int shift, float* raw) {
PLEXUS_UNROLL
  for (int k = 0; k < 4; ++k) {  // the nibble at bit 8 j + shift of the word -> bits [19, 23)
    const std::uint32_t v = load_u16(p + 2 * k);
    raw[2 * k] = one_plus((v << (19 - shift)) & 0x00780000u);
    raw[2 * k + 1] = one_plus((v << (11 - shift)) & 0x00780000u);
  }
}

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

static_assert(Q8_0::kBytes == sizeof(BlockQ8_0) && Q4_0::kBytes == sizeof(BlockQ4_0));
static_assert(Q4_K::kBytes == sizeof(BlockQ4_K) && Q6_K::kBytes == sizeof(BlockQ6_K));
static_assert(Q8_0::kTileBlocks * Q8_0::kBytes % 16 == 0 && Q4_0::kTileBlocks * Q4_0::kBytes % 16 == 0);
static_assert(Q4_K::kTileBlocks * Q4_K::kBytes % 16 == 0 && Q6_K::kTileBlocks * Q6_K::kBytes % 16 == 0);

}  // namespace plexus::blocks
