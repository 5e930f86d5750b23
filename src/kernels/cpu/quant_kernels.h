// Dot products of block-format weights with 8-bit activations (quant_x.h), one per ISA. All
// give the same bits: integer sums are exact, and the f32 part runs in one order everywhere.
// Per (token, row) an 8-lane f32 accumulator acc[l], then the 8 lanes summed as
// (l0+l4)+(l2+l6) + (l1+l5)+(l3+l7) (isa.h). Per weight block, in order:
// - Blocks of 32 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4): p[l] = sum of v·q over the block's
//   elements 4l..4l+3, v = the block's integers (Q8_0: qs; Q4_0: nibble − 8; Q5_0: q − 16; IQ4_NL:
//   kIq4Values[code]; MXFP4: kMxfp4Values[code]; Q4_1, Q5_1: q), d = f32(d_w) · d_x (MXFP4's d_w:
//   2^(e − 128), mxfp4_half_scale); acc[l] = fma(float(p[l]), d, acc[l]).
//   Q4_1 and Q5_1 then add their offset: s[l] = sum of q over elements 4l..4l+3,
//   acc[l] = fma(float(s[l]), f32(m_w) · d_x, acc[l]).
// - Super-blocks of 256 (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): with v the weights' integers
//   (Q4_K, Q5_K, Q2_K: q ≥ 0; Q6_K: q − 32; Q3_K: q in −4..3; IQ4_XS: kIq4Values[code]) and
//   sc16[s] the integer scale of elements 16s..16s+15 (Q4_K, Q5_K: sc[s / 2]; Q6_K: scales[s];
//   Q3_K: sc[s] − 32; Q2_K: scales[s] & 15; IQ4_XS: ls[s / 2] − 32):
//   S[l] = sum over the 8 chunks c of 32 elements of sc16[2c + l / 4] · (sum of v·q over the
//   chunk's elements 4l..4l+3); acc[l] = fma(float(S[l]), f32(d) · d_x, acc[l]). Formats with
//   mins then take them off: M[l] = m[l] · sums[l] (Q4_K, Q5_K) or m[2l] · sums16[2l] +
//   m[2l+1] · sums16[2l+1] (Q2_K: m[s] = scales[s] >> 4); acc[l] = fma(float(M[l]),
//   −(f32(dmin) · d_x), acc[l]).
// Every p, S and M is an exact int32 below 2^24 in magnitude (IQ4_XS's S, the largest, at most
// 127 · 127 · 4 · 32 · 8 < 2^24), so its float is exact.
#pragma once
#include <bit>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/block_formats.h"

namespace plexus {

// IsaKernels::dot_tile_q of the generic, AVX2 and AVX-512 VNNI tables.
void dot_tile_q_generic(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                        std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k);
void dot_tile_q_avx2(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                     std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k);
void dot_tile_q_avx512vnni(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                           std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k);

// Unpacks Q4_K's 6-bit scales and mins (block_formats.h): sc[j], m[j] for j < 8.
inline void q4_k_scales_mins(const std::uint8_t* s, int* sc, int* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    m[j] = s[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    m[j] = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q3_K's 6-bit scale of sub-block s (block_formats.h), before the − 32.
inline int q3_k_scale(const std::uint8_t* scales, int s) {
  const int low = s < 8 ? scales[s] & 15 : scales[s - 8] >> 4;
  return low | (((scales[8 + s % 4] >> (2 * (s / 4))) & 3) << 4);
}

// IQ4_XS's 6-bit scale of sub-block j (block_formats.h), before the − 32.
inline int iq4_xs_scale(const BlockIQ4_XS* b, int j) {
  return ((b->scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((b->scales_h >> (2 * j)) & 3) << 4);
}

// MXFP4's d_w: 2^(e − 128) for the scale byte e (block_formats.h).
inline float mxfp4_half_scale(std::uint8_t e) { return std::bit_cast<float>(mxfp4_half_scale_bits(e)); }

}  // namespace plexus
