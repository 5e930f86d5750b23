// The GGUF block formats of quantised weights, byte for byte as the GGUF specification (ggml's
// type table) lays them out: a row of a matrix is a run of whole blocks, each holding its own
// scales. Scales are IEEE half floats (f16_to_f32 in core/dtype.h), but MXFP4's power of two.
#pragma once
#include <cstdint>

namespace plexus {

// Q8_0: 32 weights, w[i] = d · qs[i].
struct BlockQ8_0 {
  std::uint16_t d;      // f16 scale
  std::int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q4_0: 32 weights, w[i] = d · (q[i] − 8) with q[i] in 0..15: q[i] = qs[i] & 15 and
// q[i + 16] = qs[i] >> 4 for i < 16.
struct BlockQ4_0 {
  std::uint16_t d;      // f16 scale
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_K: a super-block of 256 weights in 8 sub-blocks of 32. Sub-block j has a 6-bit scale sc[j]
// and a 6-bit min m[j]; w = d · sc[j] · q − dmin · m[j] with q in 0..15. `scales` packs the
// 16 six-bit values: for j < 4, sc[j] = scales[j] & 63 and m[j] = scales[j + 4] & 63; for
// j >= 4, sc[j] = (scales[j + 4] & 15) | ((scales[j − 4] >> 6) << 4) and
// m[j] = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4). The nibbles: 32-byte chunk c of qs
// (c < 4) holds sub-block 2c in its low nibbles and sub-block 2c + 1 in its high nibbles.
struct BlockQ4_K {
  std::uint16_t d;        // f16 super-block scale of the scales
  std::uint16_t dmin;     // f16 super-block scale of the mins
  std::uint8_t scales[12];
  std::uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q6_K: a super-block of 256 weights in 16 sub-blocks of 16, w = d · scales[s] · (q − 32) with
// q in 0..63 (4 low bits in ql, 2 high bits in qh). For each half h < 2 of 128 weights (ql + 64h,
// qh + 32h, scales + 8h) and l < 32:
//   q[128h + l]      = (ql[l] & 15)      | ((qh[l] >> 0) & 3) << 4
//   q[128h + l + 32] = (ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4
//   q[128h + l + 64] = (ql[l] >> 4)      | ((qh[l] >> 4) & 3) << 4
//   q[128h + l + 96] = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4
// and weight 128h + i (i < 128) takes scale scales[8h + i / 16].
struct BlockQ6_K {
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  std::uint16_t d;        // f16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

// Q4_1: 32 weights, w[i] = d · q[i] + m with q[i] in 0..15, nibbles as in Q4_0.
struct BlockQ4_1 {
  std::uint16_t d;      // f16 scale
  std::uint16_t m;      // f16 offset
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: 32 weights, w[i] = d · (q[i] − 16) with q[i] in 0..31: the low 4 bits as Q4_0's nibbles,
// bit 4 of q[i] is bit i of the little-endian 32-bit word qh.
struct BlockQ5_0 {
  std::uint16_t d;      // f16 scale
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: 32 weights, w[i] = d · q[i] + m with q[i] in 0..31 packed as in Q5_0.
struct BlockQ5_1 {
  std::uint16_t d;      // f16 scale
  std::uint16_t m;      // f16 offset
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

// The 16 values a 4-bit IQ4 code stands for (IQ4_NL and IQ4_XS): a non-uniform grid, denser
// near zero, as GGUF defines it.
inline constexpr std::int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_NL: 32 weights, w[i] = d · kIq4Values[q[i]], the 4-bit codes q packed as Q4_0's nibbles.
struct BlockIQ4_NL {
  std::uint16_t d;      // f16 scale
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// MXFP4 (OCP Microscaling, GGUF type 39): 32 weights sharing the E8M0 scale 2^(e − 127) (the byte
// e, a power of two), each a 4-bit E2M1 float q: bit 3 the sign, bits 0..2 the magnitude
// {0, 0.5, 1, 1.5, 2, 3, 4, 6}; w[i] = 2^(e − 127) · E2M1(q[i]), the codes q packed as Q4_0's
// nibbles (q[i] = qs[i] & 15, q[i + 16] = qs[i] >> 4 for i < 16). Code 8 is −0. e = 255 (NaN in
// the OCP specification) is read as 2^128, as llama.cpp reads it. The kernels take the codes'
// values doubled, as integers (kMxfp4Values), times half the scale: 2^(e − 128).
struct BlockMXFP4 {
  std::uint8_t e;       // E8M0 shared exponent
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockMXFP4) == 17);

// Twice the E2M1 value of each 4-bit code (−0 as 0): integers, so the dot kernels take them as IQ4's.
inline constexpr std::int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// The f32 bits of 2^(e − 128), half of MXFP4's scale byte e (e = 0, 1: the subnormals 2^−128,
// 2^−127): the factor of kMxfp4Values.
constexpr std::uint32_t mxfp4_half_scale_bits(std::uint32_t e) { return e < 2 ? 0x00200000u << e : (e - 1) << 23; }

// Q2_K: a super-block of 256 weights in 16 sub-blocks of 16 (in element order), w = d · sc[s] · q
// − dmin · m[s] with q in 0..3, sc[s] = scales[s] & 15 and m[s] = scales[s] >> 4. Weight
// 128h + 32j + l (h < 2, j < 4, l < 32) has q = (qs[32h + l] >> 2j) & 3.
struct BlockQ2_K {
  std::uint8_t scales[16];
  std::uint8_t qs[64];
  std::uint16_t d;        // f16 super-block scale of the scales
  std::uint16_t dmin;     // f16 super-block scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: a super-block of 256 weights in 16 sub-blocks of 16, w = d · (sc[s] − 32) · q with q in
// −4..3. Weight 128h + 32j + l (h < 2, j < 4, l < 32) has q = ((qs[32h + l] >> 2j) & 3) − 4 when
// bit 4h + j of hmask[l] is 0 (unchanged when it is 1). The 6-bit sc[s]: low 4 bits are
// scales[s] & 15 for s < 8 and scales[s − 8] >> 4 for s >= 8; high 2 bits are
// (scales[8 + s % 4] >> 2 (s / 4)) & 3.
struct BlockQ3_K {
  std::uint8_t hmask[32];
  std::uint8_t qs[64];
  std::uint8_t scales[12];
  std::uint16_t d;        // f16 super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q5_K: Q4_K with a fifth bit: sub-block j's weights are d · sc[j] · q − dmin · m[j] with q in
// 0..31; its low 4 bits are Q4_K's nibbles, bit 4 of weight 32j + l is bit j of qh[l]. Scales and
// mins packed as Q4_K's.
struct BlockQ5_K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[12];
  std::uint8_t qh[32];
  std::uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

// IQ4_XS: a super-block of 256 weights in 8 sub-blocks of 32, w = d · (ls[j] − 32) ·
// kIq4Values[q] where the 6-bit ls[j] = ((scales_l[j / 2] >> 4 (j % 2)) & 15) | (((scales_h >> 2j)
// & 3) << 4). Sub-block j's codes are 16 bytes at qs + 16j, packed as Q4_0's nibbles.
struct BlockIQ4_XS {
  std::uint16_t d;
  std::uint16_t scales_h;
  std::uint8_t scales_l[4];
  std::uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

}  // namespace plexus
