// The block formats' quantisation and dequantisation, one block at a time.
#include "kernels/quantize.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/block_formats.h"

namespace plexus {
namespace {

void dequantize_q8_0(const BlockQ8_0* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
  }
}

void dequantize_q4_0(const BlockQ4_0* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((b[i].qs[j] & 15) - 8);
      y[j + 16] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

// Sub-block j's 6-bit scale and min of a Q4_K block (block_formats.h).
void q4_k_scale_min(const std::uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

void dequantize_q4_k(const BlockQ4_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int c = 0; c < 4; ++c) {  // 64 weights: sub-blocks 2c (low nibbles) and 2c + 1 (high)
      const std::uint8_t* q = b[i].qs + 32 * c;
      int sc, m;
      q4_k_scale_min(b[i].scales, 2 * c, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      q4_k_scale_min(b[i].scales, 2 * c + 1, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(q[l] & 15) - m1;
      for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
      y += 64;
    }
  }
}

void dequantize_q6_k(const BlockQ6_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
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
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
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

}  // namespace

void dequantize_row(DType t, const void* src, float* dst, std::int64_t n) {
  const std::int64_t nb = n / dtype_block_elems(t);
  assert(n % dtype_block_elems(t) == 0);
  switch (t) {
    case DType::kQ8_0: dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb); return;
    case DType::kQ4_0: dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb); return;
    case DType::kQ4_K: dequantize_q4_k(static_cast<const BlockQ4_K*>(src), dst, nb); return;
    case DType::kQ6_K: dequantize_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb); return;
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: break;
  }
  assert(false && "dequantize_row takes a block format");
}

void quantize_row(DType t, const float* src, void* dst, std::int64_t n) {
  const std::int64_t nb = n / dtype_block_elems(t);
  assert(n % dtype_block_elems(t) == 0);
  switch (t) {
    case DType::kQ8_0: quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), nb); return;
    case DType::kQ4_0: quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), nb); return;
    case DType::kQ4_K:
    case DType::kQ6_K:  // TODO(quantize helper): Q4_K / Q6_K quantisation
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: break;
  }
  assert(false && "quantize_row takes q8_0, q4_0, q4_k or q6_k");
}

}  // namespace plexus
