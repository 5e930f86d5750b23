// The dequantisation oracle (dequantize.h), one function per block format; layouts and formulas
// in kernels/block_formats.h.
#include "kernels/ref/dequantize.h"

#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/block_formats.h"

namespace plexus {
namespace {

float half(std::uint16_t h) { return f16_to_f32(h); }

void dequantize_q8_0(const BlockQ8_0* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = half(b[i].d);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
  }
}

void dequantize_q4_0(const BlockQ4_0* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = half(b[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((b[i].qs[j] & 15) - 8);
      y[j + 16] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_q4_1(const BlockQ4_1* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = half(b[i].d), m = half(b[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(b[i].qs[j] & 15) * d + m;
      y[j + 16] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

// q[i] in 0..31 of a Q5_0 / Q5_1 block: nibble i (Q4_0's packing) and bit i of qh.
void five_bit_values(const std::uint8_t* qh_bytes, const std::uint8_t* qs, int* q) {
  std::uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}

void dequantize_q5_0(const BlockQ5_0* b, float* y, std::int64_t nb) {
  int q[32];
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = half(b[i].d);
    five_bit_values(b[i].qh, b[i].qs, q);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j] - 16) * d;
  }
}

void dequantize_q5_1(const BlockQ5_1* b, float* y, std::int64_t nb) {
  int q[32];
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = half(b[i].d), m = half(b[i].m);
    five_bit_values(b[i].qh, b[i].qs, q);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d + m;
  }
}

void dequantize_iq4_nl(const BlockIQ4_NL* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = half(b[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4Values[b[i].qs[j] & 15]);
      y[j + 16] = d * static_cast<float>(kIq4Values[b[i].qs[j] >> 4]);
    }
  }
}

// MXFP4: the E2M1 value of each code (OCP Microscaling: sign, 2 exponent bits, 1 mantissa bit)
// times 2^(e − 127), taken as twice the value times 2^(e − 128) so that e = 255's factor is finite;
// exact in f32 (e = 255: ±inf unless the value is ±0 or ±0.5).
void dequantize_mxfp4(const BlockMXFP4* b, float* y, std::int64_t nb) {
  constexpr float kTwiceE2M1[16] = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 6.0f, 8.0f, 12.0f, -0.0f, -1.0f, -2.0f, -3.0f, -4.0f, -6.0f, -8.0f, -12.0f};
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float half = std::ldexp(1.0f, static_cast<int>(b[i].e) - 128);
    for (int j = 0; j < 16; ++j) {
      y[j] = kTwiceE2M1[b[i].qs[j] & 15] * half;
      y[j + 16] = kTwiceE2M1[b[i].qs[j] >> 4] * half;
    }
  }
}

void dequantize_q2_k(const BlockQ2_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = half(b[i].d), dmin = half(b[i].dmin);
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, j = (e % 128) / 32, l = e % 32, s = e / 16;
      const int q = (b[i].qs[32 * h + l] >> (2 * j)) & 3;
      const float dl = d * static_cast<float>(b[i].scales[s] & 15), ml = dmin * static_cast<float>(b[i].scales[s] >> 4);
      y[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

// Q3_K's 6-bit scale of sub-block s (block_formats.h), before the −32.
int q3_k_scale(const std::uint8_t* scales, int s) {
  const int low = s < 8 ? scales[s] & 15 : scales[s - 8] >> 4;
  const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return low | (high << 4);
}

void dequantize_q3_k(const BlockQ3_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = half(b[i].d);
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, j = (e % 128) / 32, l = e % 32;
      const int low = (b[i].qs[32 * h + l] >> (2 * j)) & 3;
      const int q = low - (((b[i].hmask[l] >> (4 * h + j)) & 1) ? 0 : 4);
      const float dl = d * static_cast<float>(q3_k_scale(b[i].scales, e / 16) - 32);
      y[e] = dl * static_cast<float>(q);
    }
  }
}

// Sub-block j's 6-bit scale and min of a Q4_K / Q5_K block (block_formats.h).
void k4_scale_min(const std::uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

void dequantize_q4_k(const BlockQ4_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = half(b[i].d), dmin = half(b[i].dmin);
    for (int j = 0; j < 8; ++j) {  // chunk j / 2 of qs: low nibbles for even j, high for odd
      int sc, m;
      k4_scale_min(b[i].scales, j, &sc, &m);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
      const std::uint8_t* q = b[i].qs + 32 * (j / 2);
      for (int l = 0; l < 32; ++l) y[32 * j + l] = dl * static_cast<float>((q[l] >> (4 * (j % 2))) & 15) - ml;
    }
  }
}

void dequantize_q5_k(const BlockQ5_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = half(b[i].d), dmin = half(b[i].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      k4_scale_min(b[i].scales, j, &sc, &m);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
      const std::uint8_t* q = b[i].qs + 32 * (j / 2);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> (4 * (j % 2))) & 15) | (((b[i].qh[l] >> j) & 1) << 4);
        y[32 * j + l] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

void dequantize_q6_k(const BlockQ6_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i) {
    const float d = half(b[i].d);
    for (int h = 0; h < 2; ++h, y += 128) {
      const std::uint8_t* ql = b[i].ql + 64 * h;
      const std::uint8_t* qh = b[i].qh + 32 * h;
      const std::int8_t* sc = b[i].scales + 8 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_iq4_xs(const BlockIQ4_XS* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i) {
    const float d = half(b[i].d);
    for (int j = 0; j < 8; ++j, y += 32) {
      const int ls = ((b[i].scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((b[i].scales_h >> (2 * j)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const std::uint8_t* q = b[i].qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * static_cast<float>(kIq4Values[q[l] & 15]);
        y[l + 16] = dl * static_cast<float>(kIq4Values[q[l] >> 4]);
      }
    }
  }
}

template <class Block>
const Block* as(const void* p) {
  return static_cast<const Block*>(p);
}

}  // namespace

void dequantize_row(DType t, const void* src, float* dst, std::int64_t n) {
  const std::int64_t nb = n / dtype_block_elems(t);
  assert(n % dtype_block_elems(t) == 0);
  switch (t) {
    case DType::kQ8_0: return dequantize_q8_0(as<BlockQ8_0>(src), dst, nb);
    case DType::kQ4_0: return dequantize_q4_0(as<BlockQ4_0>(src), dst, nb);
    case DType::kQ4_1: return dequantize_q4_1(as<BlockQ4_1>(src), dst, nb);
    case DType::kQ5_0: return dequantize_q5_0(as<BlockQ5_0>(src), dst, nb);
    case DType::kQ5_1: return dequantize_q5_1(as<BlockQ5_1>(src), dst, nb);
    case DType::kIQ4_NL: return dequantize_iq4_nl(as<BlockIQ4_NL>(src), dst, nb);
    case DType::kQ2_K: return dequantize_q2_k(as<BlockQ2_K>(src), dst, nb);
    case DType::kQ3_K: return dequantize_q3_k(as<BlockQ3_K>(src), dst, nb);
    case DType::kQ4_K: return dequantize_q4_k(as<BlockQ4_K>(src), dst, nb);
    case DType::kQ5_K: return dequantize_q5_k(as<BlockQ5_K>(src), dst, nb);
    case DType::kQ6_K: return dequantize_q6_k(as<BlockQ6_K>(src), dst, nb);
    case DType::kIQ4_XS: return dequantize_iq4_xs(as<BlockIQ4_XS>(src), dst, nb);
    case DType::kMXFP4: return dequantize_mxfp4(as<BlockMXFP4>(src), dst, nb);
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: break;
  }
  assert(false && "dequantize_row takes a block format");
}

}  // namespace plexus
