// quantize_row's dispatch, and the 32-weight round-to-nearest formats (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, MXFP4) written as llama.cpp's reference quantisation writes them.
#include "kernels/quantize.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/block_formats.h"
#include "kernels/quantize_blocks.h"

namespace plexus {
namespace {

// The value of largest magnitude among a block's 32 (the first of equal magnitudes), sign kept:
// Q4_0's and Q5_0's d is it over −8 or −16.
float largest_magnitude(const float* x) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// The least and greatest of a block's 32: Q4_1's and Q5_1's offset and range.
void min_max(const float* x, float* lo, float* hi) {
  *lo = *hi = x[0];
  for (int j = 1; j < 32; ++j) {
    *lo = std::min(*lo, x[j]);
    *hi = std::max(*hi, x[j]);
  }
}

void quantize_q8_0(const float* x, BlockQ8_0* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < 32; ++j) {
      volatile float v = x[j] * id;  // one rounded product, never fused with what follows
      b[i].qs[j] = static_cast<std::int8_t>(std::round(v));
    }
  }
}

void quantize_q4_0(const float* x, BlockQ4_0* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    const float max = largest_magnitude(x);
    const float d = max / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < 16; ++j) {
      volatile float v0 = x[j] * id, v1 = x[j + 16] * id;  // rounded products, then + 8.5
      const int q0 = std::min(15, static_cast<int>(static_cast<std::int8_t>(v0 + 8.5f)));
      const int q1 = std::min(15, static_cast<int>(static_cast<std::int8_t>(v1 + 8.5f)));
      b[i].qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
  }
}

// Q4_1 / Q5_1: d = (max − min) / (2^bits − 1), stored min = the block's min; q = trunc((x − min) ·
// (1/d) + 0.5), the product rounded before the addition (Q4_1 clamps to 15).
void quantize_q4_1(const float* x, BlockQ4_1* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    float lo, hi;
    min_max(x, &lo, &hi);
    const float d = (hi - lo) / 15.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(lo);
    for (int j = 0; j < 16; ++j) {
      volatile float v0 = (x[j] - lo) * id, v1 = (x[j + 16] - lo) * id;
      const int q0 = std::min(15, static_cast<int>(static_cast<std::int8_t>(v0 + 0.5f)));
      const int q1 = std::min(15, static_cast<int>(static_cast<std::int8_t>(v1 + 0.5f)));
      b[i].qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
  }
}

// The 32 five-bit codes q (0..31) into Q5_0 / Q5_1's nibbles and high-bit word.
void pack_5bit(const int* q, std::uint8_t* qs, std::uint8_t* qh) {
  std::uint32_t high = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<std::uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
    high |= static_cast<std::uint32_t>((q[j] >> 4) & 1) << j;
    high |= static_cast<std::uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
  }
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<std::uint8_t>(high >> (8 * k));
}

// Q5_0: Q4_0's rule with 32 levels: d = m / −16, q = min(31, trunc(x · (1/d) + 16.5)).
void quantize_q5_0(const float* x, BlockQ5_0* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    const float max = largest_magnitude(x);
    const float d = max / -16.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    int q[32];
    for (int j = 0; j < 32; ++j) {
      volatile float v = x[j] * id;
      q[j] = std::min(31, static_cast<int>(static_cast<std::int8_t>(v + 16.5f)));
    }
    pack_5bit(q, b[i].qs, b[i].qh);
  }
}

void quantize_q5_1(const float* x, BlockQ5_1* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    float lo, hi;
    min_max(x, &lo, &hi);
    const float d = (hi - lo) / 31.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(lo);
    int q[32];
    for (int j = 0; j < 32; ++j) {
      volatile float v = (x[j] - lo) * id;
      q[j] = static_cast<int>(static_cast<std::uint8_t>(v + 0.5f));
    }
    pack_5bit(q, b[i].qs, b[i].qh);
  }
}

// The code of kMxfp4Values nearest x / d (d: MXFP4's half scale), the first of equal distances
// (so ties go to the smaller magnitude, and a negative x that rounds to 0 takes code 0, +0).
std::uint8_t nearest_mxfp4(float x, float d) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - x);
  for (int c = 1; c < 16; ++c) {
    const float err = std::fabs(static_cast<float>(kMxfp4Values[c]) * d - x);
    if (err < best_err) {
      best = c;
      best_err = err;
    }
  }
  return static_cast<std::uint8_t>(best);
}

// MXFP4: e = floor(log2(max|x|)) − 2 + 127 (the OCP specification's shared exponent: the largest
// magnitude lands in [4, 8) times 2^(e − 127), values above 6 of those clamped to 6), clamped to
// 0..254; e = 0 for a block of zeros. Each weight takes the nearest code.
void quantize_mxfp4(const float* x, BlockMXFP4* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float e = amax > 0 ? std::floor(std::log2(amax)) - 2.0f + 127.0f : 0.0f;
    b[i].e = static_cast<std::uint8_t>(std::clamp(e, 0.0f, 254.0f));
    const float d = std::bit_cast<float>(mxfp4_half_scale_bits(b[i].e));
    for (int j = 0; j < 16; ++j) {
      b[i].qs[j] = static_cast<std::uint8_t>(nearest_mxfp4(x[j], d) | (nearest_mxfp4(x[j + 16], d) << 4));
    }
  }
}

}  // namespace

void quantize_row(DType t, const float* src, void* dst, std::int64_t n) {
  const std::int64_t nb = n / dtype_block_elems(t);
  assert(n % dtype_block_elems(t) == 0);
  switch (t) {
    case DType::kQ8_0: quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), nb); return;
    case DType::kQ4_0: quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), nb); return;
    case DType::kQ4_1: quantize_q4_1(src, static_cast<BlockQ4_1*>(dst), nb); return;
    case DType::kQ5_0: quantize_q5_0(src, static_cast<BlockQ5_0*>(dst), nb); return;
    case DType::kQ5_1: quantize_q5_1(src, static_cast<BlockQ5_1*>(dst), nb); return;
    case DType::kIQ4_NL: quant::iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), nb); return;
    case DType::kMXFP4: quantize_mxfp4(src, static_cast<BlockMXFP4*>(dst), nb); return;
    case DType::kQ2_K: quant::q2_k(src, static_cast<BlockQ2_K*>(dst), nb); return;
    case DType::kQ3_K: quant::q3_k(src, static_cast<BlockQ3_K*>(dst), nb); return;
    case DType::kQ4_K: quant::q4_k(src, static_cast<BlockQ4_K*>(dst), nb); return;
    case DType::kQ5_K: quant::q5_k(src, static_cast<BlockQ5_K*>(dst), nb); return;
    case DType::kQ6_K: quant::q6_k(src, static_cast<BlockQ6_K*>(dst), nb); return;
    case DType::kIQ4_XS: quant::iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), nb); return;
    case DType::kF32: std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); return;
    case DType::kBF16:
      for (std::int64_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(dst)[i] = f32_to_bf16(src[i]);
      return;
    case DType::kF16:
      for (std::int64_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(dst)[i] = f32_to_f16(src[i]);
      return;
  }
}

}  // namespace plexus
