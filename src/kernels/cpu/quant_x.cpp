// The activations' 8-bit quantisation (quant_x.h).
#include "kernels/cpu/quant_x.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace plexus {
namespace {

// v rounded to the nearest integer, ties to even, for |v| ≤ 2^22: adding 1.5 · 2^23 leaves no
// fraction bits, so the addition rounds (the default mode: to nearest even) and the subtraction
// is exact. The same value as std::nearbyint, without its library call, so the loop vectorises.
// (This file is built with -ffp-contract=off: x · id + kMagic must not become one fma.)
inline float round_even(float v) {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}

// q (len) = x (len) / d rounded; returns d.
float quantize_block(const float* x, std::int64_t len, std::int8_t* q) {
  float amax = 0.0f;
  for (std::int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (std::int64_t i = 0; i < len; ++i) {
    const float v = std::clamp(x[i] * id, -127.0f, 127.0f);  // |x · id| ≤ 127 but for its rounding
    q[i] = static_cast<std::int8_t>(round_even(v));
  }
  return d;
}

}  // namespace

std::int64_t qx_block_elems(DType wt) { return dtype_block_elems(wt); }

std::int64_t qx_row_bytes(DType wt, std::int64_t cols) {
  const std::int64_t b = qx_block_elems(wt);
  assert(cols % b == 0);
  return cols / b * (b == 256 ? static_cast<std::int64_t>(sizeof(XBlock256)) : static_cast<std::int64_t>(sizeof(XBlock32)));
}

void quantize_x(DType wt, const float* x, std::int64_t ldx, std::int64_t n, std::int64_t cols, void* out) {
  const std::int64_t row_bytes = qx_row_bytes(wt, cols);
  for (std::int64_t t = 0; t < n; ++t) {
    const float* xr = x + t * ldx;
    std::uint8_t* o = static_cast<std::uint8_t*>(out) + t * row_bytes;
    if (qx_block_elems(wt) == 32) {
      XBlock32* b = reinterpret_cast<XBlock32*>(o);
      for (std::int64_t i = 0; i < cols / 32; ++i) b[i].d = quantize_block(xr + 32 * i, 32, b[i].q);
    } else {
      XBlock256* b = reinterpret_cast<XBlock256*>(o);
      for (std::int64_t i = 0; i < cols / 256; ++i) {
        b[i].d = quantize_block(xr + 256 * i, 256, b[i].q);
        for (int j = 0; j < 8; ++j) {
          int s = 0;
          for (int l = 0; l < 32; ++l) s += b[i].q[32 * j + l];
          b[i].sums[j] = static_cast<std::int16_t>(s);
        }
        for (int j = 0; j < 16; ++j) {
          int s = 0;
          for (int l = 0; l < 16; ++l) s += b[i].q[16 * j + l];
          b[i].sums16[j] = static_cast<std::int16_t>(s);
        }
      }
    }
  }
}

}  // namespace plexus
