// Portable kernels (no SIMD intrinsics). They follow the AVX2 kernels' arithmetic exactly:
// 8 accumulator lanes, fused multiply-adds, the same lane reduction and the same exp.
#include <cmath>
#include <cstring>

#include "kernels/cpu/exp_poly.h"
#include "kernels/cpu/isa.h"
#include "kernels/ref/dequantize.h"
#include "kernels/cpu/quant_kernels.h"

namespace plexus {
namespace {

inline float load_w(DType t, const void* w, std::int64_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(w)[i];
    case DType::kBF16: return bf16_to_f32(static_cast<const std::uint16_t*>(w)[i]);
    case DType::kF16: return f16_to_f32(static_cast<const std::uint16_t*>(w)[i]);
    default: break;  // a block format: dot_tile_q's; to_f32 dequantises
  }
  return 0;
}

inline float reduce8(const float* a) {
  const float s0 = a[0] + a[4], s1 = a[1] + a[5], s2 = a[2] + a[6], s3 = a[3] + a[7];
  return (s0 + s2) + (s1 + s3);
}

float dot_one(DType wt, const void* w, const float* x, std::int64_t k) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(load_w(wt, w, i + l), x[i + l], acc[l]);
  }
  float s = reduce8(acc);
  for (; i < k; ++i) s = std::fma(load_w(wt, w, i), x[i], s);
  return s;
}

void dot_tile(DType wt, const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y,
              std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  const std::size_t es = dtype_size(wt);
  for (std::int64_t t = 0; t < nt; ++t) {
    for (std::int64_t r = 0; r < nr; ++r) {
      const void* wr = static_cast<const std::uint8_t*>(w) + r * ldw * static_cast<std::int64_t>(es);
      y[t * ldy + r] = dot_one(wt, wr, x + t * ldx, k);
    }
  }
}

void to_f32(DType t, const void* src, float* dst, std::int64_t n) {
  if (dtype_is_block(t)) {
    dequantize_row(t, src, dst, n);  // n a multiple of the block
    return;
  }
  if (t == DType::kF32) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * 4);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) dst[i] = load_w(t, src, i);
}

float dot(const float* a, const float* b, std::int64_t n) { return dot_one(DType::kF32, a, b, n); }

void axpy(float a, const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}

void weighted_rows(const float* w, std::int64_t n, const float* rows, std::int64_t ld, float* out, std::int64_t d) {
  for (std::int64_t c = 0; c < d; ++c) out[c] = 0.0f;
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t c = 0; c < d; ++c) out[c] = std::fma(w[j], rows[j * ld + c], out[c]);
  }
}

void scale(float a, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] *= a;
}

inline float exp_approx(float x) {
  using namespace exp_poly;
  x = std::fmin(std::fmax(x, kMin), kMax);
  const float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = kP5;
  p = std::fma(p, r, kP4);
  p = std::fma(p, r, kP3);
  p = std::fma(p, r, kP2);
  p = std::fma(p, r, kP1);
  p = std::fma(p, r, kP0);
  p = std::fma(p, r * r, r + 1.0f);
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, 4);
  return p * two_n;
}

float exp_shift_sum(float* x, float shift, std::int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += (x[i + l] = exp_approx(x[i + l] - shift));
  }
  float s = reduce8(acc);
  for (; i < n; ++i) s += (x[i] = exp_approx(x[i] - shift));
  return s;
}

void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + exp_approx(-gate[i])) * up[i];
}

float sum_squares(const float* x, std::int64_t n) { return dot(x, x, n); }

}  // namespace

const IsaKernels& generic_kernels() {
  static const IsaKernels k = [] {
    IsaKernels t{"generic", 1, dot_tile, to_f32, dot, axpy, weighted_rows, scale, exp_shift_sum, silu_mul, sum_squares, false, 3};
    t.dot_tile_q = dot_tile_q_generic;
    return t;
  }();
  return k;
}

}  // namespace plexus
