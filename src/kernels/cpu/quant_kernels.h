// Dot products of block-format weight rows with 8-bit activations (quant_x.h), one per ISA. All
// give the same bits: integer sums are exact, and the f32 part runs in one order everywhere.
// Per (token, row) an 8-lane f32 accumulator acc[l], then the 8 lanes summed as
// (l0+l4)+(l2+l6) + (l1+l5)+(l3+l7) (isa.h). Per weight block, in order:
// - Q8_0, Q4_0 (block 32): p[l] = sum of w·q over the block's elements 4l..4l+3 (w = the block's
//   integers: qs, or the nibble − 8), d = f32(d_w) · d_x; acc[l] = fma(float(p[l]), d, acc[l]).
// - Q4_K (super-block 256, sub-blocks j of 32 with scale sc[j], min m[j]): S[l] = sum over j of
//   sc[j] · (sum of q·xq over sub-block j's elements 4l..4l+3); M[l] = m[l] · (sum of xq over
//   sub-block l); acc[l] = fma(float(S[l]), f32(d) · d_x, acc[l]), then
//   acc[l] = fma(float(M[l]), −(f32(dmin) · d_x), acc[l]).
// - Q6_K (super-block 256, sub-blocks of 16 with int8 scale sc[s]): S[l] = sum over the 8 chunks c
//   of 32 elements of sc[2c + l / 4] · (sum of (q − 32)·xq over the chunk's elements 4l..4l+3);
//   acc[l] = fma(float(S[l]), f32(d) · d_x, acc[l]).
// Every S, M and p is below 2^24 in magnitude, so its float is exact.
#pragma once
#include <cstdint>

#include "core/dtype.h"

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

}  // namespace plexus
