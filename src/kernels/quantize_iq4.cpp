// IQ4_NL and IQ4_XS (codes into the 16-value table kIq4Values), quantised as llama.cpp's
// `llama-quantize` does without an importance matrix, byte for byte: each block of 32 weights
// tries 16 scales (x²-weighted least squares over the nearest table values) and keeps the best;
// IQ4_XS then stores each block's scale as a 6-bit multiple of its super-block scale.
// The arithmetic is all f32 in a fixed order (the file is built with -ffp-contract=off).
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "kernels/quantize_blocks.h"

namespace plexus::quant {
namespace {

constexpr int kTries = 7;  // scales tried on each side of the first guess

// Index of the table value nearest x; a tie goes to the larger value.
int nearest_iq4(float x) {
  if (x <= kIq4Values[0]) return 0;
  if (x >= kIq4Values[15]) return 15;
  int lo = 0, hi = 15;  // kIq4Values[lo] < x < kIq4Values[hi]: bisect down to neighbours
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (x < kIq4Values[mid] ? hi : lo) = mid;
  }
  return x - kIq4Values[lo] < kIq4Values[hi] - x ? lo : hi;
}

// Σ w·q·x and Σ w·q² (w = x²) over the n weights x rounded to the table under inverse scale id;
// the codes go to codes when it is not null.
void table_sums(const float* x, int n, float id, float* sumqx, float* sumq2, std::uint8_t* codes) {
  float sx = 0, s2 = 0;
  for (int j = 0; j < n; ++j) {
    const int l = nearest_iq4(id * x[j]);
    if (codes != nullptr) codes[j] = static_cast<std::uint8_t>(l);
    const float q = kIq4Values[l];
    const float w = x[j] * x[j];
    sx += w * q * x[j];
    s2 += w * q * q;
  }
  *sumqx = sx;
  *sumq2 = s2;
}

// The scale of a block of 32: 0 for a block of (near) zeros; else the best of the first guess
// d = max / 127 (the weight of largest magnitude at ±127) and of inverse scales (t − 127) / max
// for t in −kTries..kTries, each refitted by least squares, "best" comparing Σqx² / Σq².
float fit_block_scale(const float* x) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < 1e-15f) return 0;
  float sumqx, sumq2;
  table_sums(x, 32, 1.0f / (max / 127.0f), &sumqx, &sumq2, nullptr);
  float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int t = -kTries; t <= kTries; ++t) {
    table_sums(x, 32, static_cast<float>(t + kIq4Values[0]) / max, &sumqx, &sumq2, nullptr);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// The 32 codes of x under scale d (0 → all codes at the table's value nearest 0), packed as
// Q4_0's nibbles.
void pack_codes(const float* x, float d, std::uint8_t* qs) {
  const float id = d != 0 ? 1.0f / d : 0.0f;
  std::uint8_t l[32];
  for (int j = 0; j < 32; ++j) l[j] = static_cast<std::uint8_t>(nearest_iq4(id * x[j]));
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<std::uint8_t>(l[j] | (l[j + 16] << 4));
}

}  // namespace

void iq4_nl(const float* x, BlockIQ4_NL* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    const float d = fit_block_scale(x);
    b[i].d = f32_to_f16(d);
    pack_codes(x, d, b[i].qs);
  }
}

// IQ4_XS: the super-block scale is D = −(the block scale of largest magnitude) / 32 (f16); block j
// stores ls = clamp(round-half-even(s_j / D), −32, 31) + 32 and its codes are re-rounded under
// D · (ls − 32), both computed from the f32 D.
void iq4_xs(const float* x, BlockIQ4_XS* b, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    float s[8];
    float amax = 0, max = 0;
    for (int j = 0; j < 8; ++j) {
      s[j] = fit_block_scale(x + 32 * j);
      if (std::fabs(s[j]) > amax) {
        amax = std::fabs(s[j]);
        max = s[j];
      }
    }
    const float d = -max / 32.0f;  // −0 when every block is zero, stored so
    b[i].d = f32_to_f16(d);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    std::uint16_t high = 0;
    std::memset(b[i].scales_l, 0, sizeof b[i].scales_l);
    for (int j = 0; j < 8; ++j) {
      int l = static_cast<int>(std::nearbyint(id * s[j]));
      l = l < -32 ? -32 : l > 31 ? 31 : l;
      pack_codes(x + 32 * j, d * static_cast<float>(l), b[i].qs + 16 * j);
      const int u = l + 32;
      b[i].scales_l[j / 2] = static_cast<std::uint8_t>(b[i].scales_l[j / 2] | ((u & 15) << (4 * (j % 2))));
      high = static_cast<std::uint16_t>(high | ((u >> 4) << (2 * j)));
    }
    b[i].scales_h = high;
  }
}

}  // namespace plexus::quant
