// The block formats' quantisation and dequantisation, one block at a time.
#include "kernels/quantize.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/block_formats.h"

namespace plexus {
namespace {

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

// v rounded half away from zero, clamped to the integers [lo, hi] first (NaN → lo): no libm call
// in the search's inner loops, and no conversion of an out-of-range float.
float round_clamped(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return v >= 0 ? static_cast<float>(static_cast<int>(v + 0.5f)) : -static_cast<float>(static_cast<int>(0.5f - v));
}

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
  double best_err = INFINITY;
  float best_s = (hi - lo) / static_cast<float>(nmax), best_m = -lo;
  double sx = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    sx += x[i];
    sxx += static_cast<double>(x[i]) * x[i];
  }
  for (int k = -10; k <= 10; ++k) {  // inverse scales around nmax / range
    const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / (hi - lo);
    double sq = 0, sqq = 0, sxq = 0;
    for (int i = 0; i < n; ++i) {
      const float q = round_clamped(iscale * (x[i] - lo), 0.0f, static_cast<float>(nmax));
      sq += q;
      sqq += static_cast<double>(q) * q;
      sxq += static_cast<double>(x[i]) * q;
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
    // Σ(s·q + b − x)², expanded in the sums above.
    const double err = s * s * sqq + n * b * b + sxx + 2 * s * b * sq - 2 * s * sxq - 2 * b * sx;
    if (err < best_err) {
      best_err = err;
      best_s = static_cast<float>(s);
      best_m = static_cast<float>(-b);
    }
  }
  *s_out = best_s;
  *m_out = best_m;
  return static_cast<float>(std::max(0.0, best_err));
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
  double best_err = INFINITY;
  float best_s = max / static_cast<float>(-nmax);
  for (int k = -8; k <= 8; ++k) {
    // The largest-magnitude value at level ∓(nmax − 0.1k): −nmax uses the extra negative level.
    for (const float sign : {-1.0f, 1.0f}) {
      const float target = sign * (static_cast<float>(nmax) + 0.1f * static_cast<float>(k));
      if (sign > 0 && target > static_cast<float>(nmax) - 0.5f) continue;
      const float iscale = target / max;
      double sxq = 0, sqq = 0;
      for (int i = 0; i < n; ++i) {
        const float q = round_clamped(iscale * x[i], static_cast<float>(-nmax), static_cast<float>(nmax - 1));
        sxq += static_cast<double>(x[i]) * q;
        sqq += static_cast<double>(q) * q;
      }
      if (sqq == 0) continue;
      const double s = sxq / sqq;
      // Σ(s·q − x)² at the best s = Σx² − (Σxq)² / Σq²: the first term is the same for every
      // candidate, so comparing −(Σxq)² / Σq² suffices.
      const double err = -sxq * sxq / sqq;
      if (err < best_err) {
        best_err = err;
        best_s = static_cast<float>(s);
      }
    }
  }
  double sxx = 0;
  for (int i = 0; i < n; ++i) sxx += static_cast<double>(x[i]) * x[i];
  *s_out = best_s;
  return static_cast<float>(std::max(0.0, sxx + best_err));
}

// Rounds v / d to an integer in 0..hi; 0 when d is 0.
int quantise_scale(float v, float d, int hi) {
  if (d == 0) return 0;
  return static_cast<int>(round_clamped(v / d, 0.0f, static_cast<float>(hi)));
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
        const int q = static_cast<int>(round_clamped((x[32 * j + l] + dm) * ids, 0.0f, 15.0f));
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
        sc = static_cast<int>(round_clamped(s[j] / d, -127.0f, 127.0f));
      }
      b[i].scales[j] = static_cast<std::int8_t>(sc);
      const float ds = d * static_cast<float>(sc);
      const float ids = ds != 0 ? 1.0f / ds : 0.0f;
      for (int l = 0; l < 16; ++l) {
        q[16 * j + l] = static_cast<int>(round_clamped(x[16 * j + l] * ids, -32.0f, 31.0f)) + 32;
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

void quantize_row(DType t, const float* src, void* dst, std::int64_t n) {
  const std::int64_t nb = n / dtype_block_elems(t);
  assert(n % dtype_block_elems(t) == 0);
  switch (t) {
    case DType::kQ8_0: quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), nb); return;
    case DType::kQ4_0: quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), nb); return;
    case DType::kQ4_K: quantize_q4_k(src, static_cast<BlockQ4_K*>(dst), nb); return;
    case DType::kQ6_K: quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), nb); return;
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ5_K:
    case DType::kIQ4_XS:
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: break;
  }
  assert(false && "quantize_row takes q8_0, q4_0, q4_k or q6_k");
}

}  // namespace plexus
