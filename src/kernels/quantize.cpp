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

// --- Q4_K and Q6_K: our own scale search -------------------------------------------------------
// Each sub-block gets the (scale, min) or scale that minimises its squared error over a handful
// of candidate grids: a candidate inverse scale maps the sub-block onto the integer levels, the
// levels are rounded, and the best scale (and min) for those levels is solved in closed form
// (least squares). The sub-block scales are then quantised against the super-block scale(s) and
// the weights re-rounded with the scales they will be decoded with.

float round_half_away(float v) { return std::round(v); }

// Best w ≈ s · q − m (s ≥ 0, m ≥ 0, q in 0..nmax) for x (n); returns the squared error.
float fit_scale_min(const float* x, int n, int nmax, float* s_out, float* m_out) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);  // the min is stored non-negative: the lowest level is −m ≤ 0
  if (hi <= lo) {           // constant (non-positive) or all-zero sub-block: w = −m exactly
    *s_out = 0;
    *m_out = -lo;
    return 0;
  }
  float best_err = INFINITY, best_s = (hi - lo) / static_cast<float>(nmax), best_m = -lo;
  std::uint8_t q[32];
  for (int k = -10; k <= 10; ++k) {  // inverse scales around nmax / range
    const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / (hi - lo);
    double sq = 0, sqq = 0, sx = 0, sxq = 0;
    for (int i = 0; i < n; ++i) {
      const float l = round_half_away(iscale * (x[i] - lo));
      q[i] = static_cast<std::uint8_t>(std::clamp(l, 0.0f, static_cast<float>(nmax)));
      sq += q[i];
      sqq += static_cast<double>(q[i]) * q[i];
      sx += x[i];
      sxq += static_cast<double>(x[i]) * q[i];
    }
    // Least squares for x ≈ s · q + b; b = −m must be ≤ 0, else b = 0 and s = Σxq / Σq².
    const double det = n * sqq - sq * sq;
    double s = 0, b = 0;
    if (det > 0) {
      s = (n * sxq - sq * sx) / det;
      b = (sqq * sx - sq * sxq) / det;
    }
    if (b > 0 || det <= 0) {
      b = 0;
      s = sqq > 0 ? sxq / sqq : 0;
    }
    if (s < 0) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double e = s * q[i] + b - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = static_cast<float>(err);
      best_s = static_cast<float>(s);
      best_m = static_cast<float>(-b);
    }
  }
  *s_out = best_s;
  *m_out = best_m;
  return best_err;
}

// Best w ≈ s · q (q in −nmax..nmax−1, s of either sign) for x (n); returns the squared error.
float fit_scale_symmetric(const float* x, int n, int nmax, float* s_out) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0) {
    *s_out = 0;
    return 0;
  }
  float best_err = INFINITY, best_s = max / static_cast<float>(-nmax);
  for (int k = -8; k <= 8; ++k) {
    // The largest-magnitude value at level ∓(nmax − 0.1k): −nmax uses the extra negative level.
    for (const float sign : {-1.0f, 1.0f}) {
      const float target = sign * (static_cast<float>(nmax) + 0.1f * static_cast<float>(k));
      if (sign > 0 && target > static_cast<float>(nmax) - 0.5f) continue;
      const float iscale = target / max;
      double sxq = 0, sqq = 0;
      std::int8_t q[16];
      for (int i = 0; i < n; ++i) {
        const float l = std::clamp(round_half_away(iscale * x[i]), static_cast<float>(-nmax),
                                   static_cast<float>(nmax - 1));
        q[i] = static_cast<std::int8_t>(l);
        sxq += static_cast<double>(x[i]) * q[i];
        sqq += static_cast<double>(q[i]) * q[i];
      }
      if (sqq == 0) continue;
      const double s = sxq / sqq;
      double err = 0;
      for (int i = 0; i < n; ++i) {
        const double e = s * q[i] - x[i];
        err += e * e;
      }
      if (err < best_err) {
        best_err = static_cast<float>(err);
        best_s = static_cast<float>(s);
      }
    }
  }
  *s_out = best_s;
  return best_err;
}

// Rounds v / d to an integer in 0..hi; 0 when d is 0.
int quantise_scale(float v, float d, int hi) {
  if (d == 0) return 0;
  return static_cast<int>(std::clamp(round_half_away(v / d), 0.0f, static_cast<float>(hi)));
}

// Q4_K: the sub-block scales and mins are 6-bit multiples of d = max scale / 63 and
// dmin = max min / 63 (both f16); the weights are then re-rounded with the decoded
// d · sc and dmin · m.
void quantize_q4_k(const float* x, BlockQ4_K* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    float s[8], m[8];
    float max_s = 0, max_m = 0;
    for (int j = 0; j < 8; ++j) {
      fit_scale_min(x + 32 * j, 32, 15, &s[j], &m[j]);
      max_s = std::max(max_s, s[j]);
      max_m = std::max(max_m, m[j]);
    }
    b[i].d = f32_to_f16(max_s / 63.0f);
    b[i].dmin = f32_to_f16(max_m / 63.0f);
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = quantise_scale(s[j], d, 63);
      mn[j] = quantise_scale(m[j], dmin, 63);
    }
    for (int j = 0; j < 4; ++j) {  // the packing of block_formats.h
      b[i].scales[j] = static_cast<std::uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
      b[i].scales[j + 4] = static_cast<std::uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
      b[i].scales[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
    for (int j = 0; j < 8; ++j) {
      const float ds = d * static_cast<float>(sc[j]), dm = dmin * static_cast<float>(mn[j]);
      const float ids = ds != 0 ? 1.0f / ds : 0.0f;
      std::uint8_t* qs = b[i].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) {
        const float v = std::clamp(round_half_away((x[32 * j + l] + dm) * ids), 0.0f, 15.0f);
        const int q = std::isnan(v) ? 0 : static_cast<int>(v);
        if (shift == 0) qs[l] = static_cast<std::uint8_t>(q);
        else qs[l] = static_cast<std::uint8_t>(qs[l] | (q << 4));
      }
    }
  }
}

// Q6_K: sub-block scales are int8 multiples of d = max|scale| / 127 (f16, d ≥ 0; a sub-block
// scale keeps its sign, so the largest-magnitude one is ±127); weights re-rounded to −32..31
// with the decoded d · scales[s].
void quantize_q6_k(const float* x, BlockQ6_K* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    float s[16];
    float amax = 0;
    for (int j = 0; j < 16; ++j) {
      fit_scale_symmetric(x + 16 * j, 16, 32, &s[j]);
      amax = std::max(amax, std::fabs(s[j]));
    }
    b[i].d = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(b[i].d);
    int q[256];
    for (int j = 0; j < 16; ++j) {
      int sc = 0;
      if (d != 0) {
        sc = static_cast<int>(std::clamp(round_half_away(s[j] / d), -127.0f, 127.0f));
      }
      b[i].scales[j] = static_cast<std::int8_t>(sc);
      const float ds = d * static_cast<float>(sc);
      const float ids = ds != 0 ? 1.0f / ds : 0.0f;
      for (int l = 0; l < 16; ++l) {
        const float v = std::clamp(round_half_away(x[16 * j + l] * ids), -32.0f, 31.0f);
        q[16 * j + l] = (std::isnan(v) ? 0 : static_cast<int>(v)) + 32;
      }
    }
    for (int h = 0; h < 2; ++h) {  // the packing of block_formats.h
      std::uint8_t* ql = b[i].ql + 64 * h;
      std::uint8_t* qh = b[i].qh + 32 * h;
      const int* qq = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<std::uint8_t>((qq[l] & 15) | ((qq[l + 64] & 15) << 4));
        ql[l + 32] = static_cast<std::uint8_t>((qq[l + 32] & 15) | ((qq[l + 96] & 15) << 4));
        qh[l] = static_cast<std::uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) |
                                          ((qq[l + 64] >> 4) << 4) | ((qq[l + 96] >> 4) << 6));
      }
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
    case DType::kQ4_K: quantize_q4_k(src, static_cast<BlockQ4_K*>(dst), nb); return;
    case DType::kQ6_K: quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), nb); return;
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: break;
  }
  assert(false && "quantize_row takes q8_0, q4_0, q4_k or q6_k");
}

}  // namespace plexus
