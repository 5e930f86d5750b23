// The K super-block formats (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): our own least-squares scale search.
// Each sub-block gets the (scale, min) or scale that minimises its squared error over a handful
// of candidate grids: a candidate inverse scale maps the sub-block onto the integer levels, the
// levels are rounded, and the best scale (and min) for those levels is solved in closed form
// (least squares). The sub-block scales are then quantised against the super-block scale(s) and
// the weights re-rounded with the scales they will be decoded with.
#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "kernels/quantize_blocks.h"

namespace plexus::quant {
namespace {

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

// Q4_K / Q5_K: 8 sub-blocks of 32 fitted as s · q − m (q in 0..nmax); the scales and mins become
// 6-bit multiples of d = max scale / 63 and dmin = max min / 63 (both f16, packed as
// block_formats.h describes), and the 256 codes q are re-rounded with the decoded d · sc and
// dmin · m.
void fit_k_scales_mins(const float* x, int nmax, std::uint16_t* d_out, std::uint16_t* dmin_out, std::uint8_t* scales,
                       int* q) {
  float s[8], m[8];
  float max_s = 0, max_m = 0;
  for (int j = 0; j < 8; ++j) {
    fit_scale_min(x + 32 * j, 32, nmax, &s[j], &m[j]);
    max_s = std::max(max_s, s[j]);
    max_m = std::max(max_m, m[j]);
  }
  *d_out = f32_to_f16(max_s / 63.0f);
  *dmin_out = f32_to_f16(max_m / 63.0f);
  const float d = f16_to_f32(*d_out), dmin = f16_to_f32(*dmin_out);
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = quantise_scale(s[j], d, 63);
    mn[j] = quantise_scale(m[j], dmin, 63);
  }
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<std::uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<std::uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  for (int j = 0; j < 8; ++j) {
    const float ds = d * static_cast<float>(sc[j]), dm = dmin * static_cast<float>(mn[j]);
    const float ids = ds != 0 ? 1.0f / ds : 0.0f;
    for (int l = 0; l < 32; ++l) {
      q[32 * j + l] = static_cast<int>(round_clamped((x[32 * j + l] + dm) * ids, 0.0f, static_cast<float>(nmax)));
    }
  }
}

// The low 4 bits of Q4_K / Q5_K's 256 codes: 32-byte chunk c holds sub-block 2c in its low
// nibbles and sub-block 2c + 1 in its high nibbles.
void pack_k_nibbles(const int* q, std::uint8_t* qs) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      qs[32 * c + l] = static_cast<std::uint8_t>((q[64 * c + l] & 15) | ((q[64 * c + 32 + l] & 15) << 4));
    }
  }
}

// The low 2 bits of Q2_K / Q3_K's 256 codes: weight 128h + 32j + l in bits 2j of qs[32h + l].
void pack_k_2bit(const int* q, std::uint8_t* qs) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int* qq = q + 128 * h + l;
      qs[32 * h + l] = static_cast<std::uint8_t>((qq[0] & 3) | ((qq[32] & 3) << 2) | ((qq[64] & 3) << 4) | ((qq[96] & 3) << 6));
    }
  }
}

}  // namespace

void q4_k(const float* x, BlockQ4_K* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    int q[256];
    fit_k_scales_mins(x, 15, &b[i].d, &b[i].dmin, b[i].scales, q);
    pack_k_nibbles(q, b[i].qs);
  }
}

// Q5_K: Q4_K's fit with 32 levels; bit 4 of weight 32j + l is bit j of qh[l].
void q5_k(const float* x, BlockQ5_K* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    int q[256];
    fit_k_scales_mins(x, 31, &b[i].d, &b[i].dmin, b[i].scales, q);
    pack_k_nibbles(q, b[i].qs);
    for (int l = 0; l < 32; ++l) {
      int high = 0;
      for (int j = 0; j < 8; ++j) high |= ((q[32 * j + l] >> 4) & 1) << j;
      b[i].qh[l] = static_cast<std::uint8_t>(high);
    }
  }
}

// Q2_K: 16 sub-blocks of 16 fitted as s · q − m (q in 0..3); scales and mins are 4-bit multiples
// of d = max scale / 15 and dmin = max min / 15 (f16); codes re-rounded with the decoded values.
void q2_k(const float* x, BlockQ2_K* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    float s[16], m[16];
    float max_s = 0, max_m = 0;
    for (int j = 0; j < 16; ++j) {
      fit_scale_min(x + 16 * j, 16, 3, &s[j], &m[j]);
      max_s = std::max(max_s, s[j]);
      max_m = std::max(max_m, m[j]);
    }
    b[i].d = f32_to_f16(max_s / 15.0f);
    b[i].dmin = f32_to_f16(max_m / 15.0f);
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    int q[256];
    for (int j = 0; j < 16; ++j) {
      const int sc = quantise_scale(s[j], d, 15), mn = quantise_scale(m[j], dmin, 15);
      b[i].scales[j] = static_cast<std::uint8_t>(sc | (mn << 4));
      const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(mn);
      const float ids = ds != 0 ? 1.0f / ds : 0.0f;
      for (int l = 0; l < 16; ++l) q[16 * j + l] = static_cast<int>(round_clamped((x[16 * j + l] + dm) * ids, 0.0f, 3.0f));
    }
    pack_k_2bit(q, b[i].qs);
  }
}

// Q3_K: 16 sub-blocks of 16 fitted as s · q (q in −4..3, s of either sign); the scales are
// 6-bit signed multiples (−32..31) of d = −(the scale of largest magnitude) / 32 (f16), so that
// scale lands on −32; codes re-rounded with the decoded d · sc.
void q3_k(const float* x, BlockQ3_K* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    float s[16];
    float amax = 0, max = 0;
    for (int j = 0; j < 16; ++j) {
      fit_scale_symmetric(x + 16 * j, 16, 4, &s[j]);
      if (std::fabs(s[j]) > amax) {
        amax = std::fabs(s[j]);
        max = s[j];
      }
    }
    b[i].d = f32_to_f16(max / -32.0f);
    const float d = f16_to_f32(b[i].d);
    int q[256];
    std::fill(b[i].scales, b[i].scales + 12, std::uint8_t{0});
    std::fill(b[i].hmask, b[i].hmask + 32, std::uint8_t{0});
    for (int j = 0; j < 16; ++j) {
      const int sc = d != 0 ? static_cast<int>(round_clamped(s[j] / d, -32.0f, 31.0f)) : 0;
      const int u = sc + 32;  // stored 6 bits: low 4 in scales[j % 8] (high nibble from j = 8), high 2 in scales[8 + j % 4]
      b[i].scales[j % 8] = static_cast<std::uint8_t>(b[i].scales[j % 8] | ((u & 15) << (j < 8 ? 0 : 4)));
      b[i].scales[8 + j % 4] = static_cast<std::uint8_t>(b[i].scales[8 + j % 4] | ((u >> 4) << (2 * (j / 4))));
      const float ds = d * static_cast<float>(sc);
      const float ids = ds != 0 ? 1.0f / ds : 0.0f;
      for (int l = 0; l < 16; ++l) q[16 * j + l] = static_cast<int>(round_clamped(x[16 * j + l] * ids, -4.0f, 3.0f)) + 4;
    }
    pack_k_2bit(q, b[i].qs);
    for (int w = 0; w < 256; ++w) {  // bit 2 of weight 128h + 32j + l: bit 4h + j of hmask[l]
      const int h = w / 128, j = (w % 128) / 32, l = w % 32;
      b[i].hmask[l] = static_cast<std::uint8_t>(b[i].hmask[l] | ((q[w] >> 2) << (4 * h + j)));
    }
  }
}

// Q6_K: sub-block scales are int8 multiples of d = max|scale| / 127 (f16, d ≥ 0; a sub-block
// scale keeps its sign, so the largest-magnitude one is ±127); weights re-rounded to −32..31
// with the decoded d · scales[s].
void q6_k(const float* x, BlockQ6_K* b, std::int64_t nb) {
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


}  // namespace plexus::quant
