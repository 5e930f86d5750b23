// The GGUF block formats of quantised weights, byte for byte as the GGUF specification (ggml's
// type table) lays them out: a row of a matrix is a run of whole blocks, each holding its own
// scales. Scales are IEEE half floats (f16_to_f32 in core/dtype.h).
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

}  // namespace plexus
