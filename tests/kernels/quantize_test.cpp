// The block formats' quantisation (kernels/quantize.h): round-trip error on Gaussian rows,
// degenerate rows (zeros, constants, huge and tiny magnitudes), and decoding of hand-built
// blocks against the formulas of kernels/block_formats.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "kernels/block_formats.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize.h"

namespace plexus {
namespace {

constexpr DType kAll[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kMXFP4,
                          DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS};

std::vector<float> round_trip(DType t, const std::vector<float>& x) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(dtype_row_bytes(t, n)));
  quantize_row(t, x.data(), bytes.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(t, bytes.data(), y.data(), n);
  return y;
}

// RMS of (y − x) over RMS of x.
double relative_rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0, s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    e += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    s += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(e / s);
}

std::vector<float> gaussian(std::int64_t n, float sd, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// Measured on 64 rows of 4096 N(0, 0.05) values, mean (worst row): Q8_0 0.0054 (0.0056), Q4_0
// 0.086 (0.090), Q4_K 0.071 (0.074), Q6_K 0.0174 (0.0180), MXFP4 0.118 (0.121: its power-of-two
// scale and 6-to-8 clamp cost more than IQ4_NL's f16 scale); the bounds sit a little above the
// worst. (llama.cpp's own Q4_K / Q6_K tensors of a N(0, 0.05) checkpoint: 0.0714 / 0.0178.)
TEST(Quantize, GaussianRoundTripErrorIsBounded) {
  struct Case {
    DType t;
    double bound;
  };
  for (const Case c : {Case{DType::kQ8_0, 0.0062}, Case{DType::kQ4_0, 0.095}, Case{DType::kQ4_1, 0.085},
                       Case{DType::kQ5_0, 0.047}, Case{DType::kQ5_1, 0.042}, Case{DType::kIQ4_NL, 0.083}, Case{DType::kMXFP4, 0.125},
                       Case{DType::kQ4_K, 0.08}, Case{DType::kQ6_K, 0.02}}) {
    std::mt19937 rng(7);
    double worst = 0, sum = 0;
    for (int r = 0; r < 64; ++r) {
      const auto x = gaussian(4096, 0.05f, rng);
      const double e = relative_rms_error(x, round_trip(c.t, x));
      worst = std::max(worst, e);
      sum += e;
    }
    std::printf("%s: relative RMS error mean %.5f, worst %.5f\n", std::string(dtype_name(c.t)).c_str(), sum / 64, worst);
    EXPECT_LT(worst, c.bound) << dtype_name(c.t) << " mean " << sum / 64;
  }
}

// The K formats and IQ4_XS against llama.cpp's own quantisation of the same rows (64 rows of 4096
// N(0, 0.05) values; then the same rows with every 97th value ×8 and the first 64 zero): the
// relative RMS error over all rows must stay within 2 % of llama.cpp's, measured with
// benchmarks/llama_cpp/quant_error.cpp (ggml_quantize_chunk without an importance matrix):
//   Gaussian:      Q2_K 0.2959, Q3_K 0.1512, Q4_K 0.0715, Q5_K 0.0362, Q6_K 0.0178, IQ4_XS 0.0767
//   with outliers: Q2_K 0.3354, Q3_K 0.1931, Q4_K 0.0897, Q5_K 0.0451, Q6_K 0.0259, IQ4_XS 0.1089
// (plexus, same data: 0.2693 0.1440 0.0714 0.0359 0.0174 0.0767 / 0.2939 0.1877 0.0898 0.0451
// 0.0257 0.1089.)
TEST(Quantize, KFormatsAreAsPreciseAsLlamaCpp) {
  struct Case {
    DType t;
    double gaussian, outliers;  // llama.cpp's relative RMS error
  };
  for (const bool outliers : {false, true}) {
    std::mt19937 rng(7);
    std::vector<float> x = gaussian(64 * 4096, 0.05f, rng);
    if (outliers) {
      for (std::size_t i = 0; i < x.size(); i += 97) x[i] *= 8;
      for (std::size_t i = 0; i < 64; ++i) x[i] = 0;
    }
    for (const Case c : {Case{DType::kQ2_K, 0.2959, 0.3354}, Case{DType::kQ3_K, 0.1512, 0.1931},
                         Case{DType::kQ4_K, 0.0715, 0.0897}, Case{DType::kQ5_K, 0.0362, 0.0451},
                         Case{DType::kQ6_K, 0.0178, 0.0259}, Case{DType::kIQ4_XS, 0.0767, 0.1089}}) {
      const double e = relative_rms_error(x, round_trip(c.t, x));
      const double theirs = outliers ? c.outliers : c.gaussian;
      std::printf("%s%s: relative RMS error %.5f (llama.cpp %.4f)\n", std::string(dtype_name(c.t)).c_str(),
                  outliers ? " with outliers" : "", e, theirs);
      EXPECT_LT(e, theirs * 1.02) << dtype_name(c.t) << (outliers ? " with outliers" : "");
    }
  }
}

// The 4-bit K format beats the 4-bit plain format, and 6 bits beat 4 (the scale search earns
// its keep).
TEST(Quantize, FormatsRankByPrecision) {
  std::mt19937 rng(3);
  const auto x = gaussian(256 * 16, 1.0f, rng);
  const double q4_0 = relative_rms_error(x, round_trip(DType::kQ4_0, x));
  const double q4_k = relative_rms_error(x, round_trip(DType::kQ4_K, x));
  const double q6_k = relative_rms_error(x, round_trip(DType::kQ6_K, x));
  const double q8_0 = relative_rms_error(x, round_trip(DType::kQ8_0, x));
  EXPECT_LT(q4_k, q4_0);
  EXPECT_LT(q6_k, q4_k);
  EXPECT_LT(q8_0, q6_k);
}

TEST(Quantize, ZeroRowsDecodeToZero) {
  for (DType t : kAll) {
    const std::vector<float> x(512, 0.0f);
    for (float v : round_trip(t, x)) ASSERT_EQ(v, 0.0f) << dtype_name(t);
  }
}

TEST(Quantize, ConstantRowsDecodeClose) {
  for (DType t : kAll) {
    for (float c : {1.0f, -1.0f, 0.37f, -123.5f}) {
      const std::vector<float> x(512, c);
      for (float v : round_trip(t, x)) {
        // One f16 rounding of a scale (relative 2^-11) times at most the level count. MXFP4's
        // scale is a power of two: values in [6, 8) times it clamp to 6 (−123.5 to −96).
        ASSERT_NEAR(v, c, std::fabs(c) * (t == DType::kMXFP4 ? 0.25f : 0.01f)) << dtype_name(t) << " c=" << c;
      }
    }
  }
}

// Rows that mix constants with zeros: the K formats keep the zeros' sub-blocks exact.
TEST(Quantize, SubBlocksOfZerosStayZero) {
  std::mt19937 rng(11);
  for (DType t : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    auto x = gaussian(256, 1.0f, rng);
    for (int i = 0; i < 32; ++i) x[static_cast<std::size_t>(i)] = 0.0f;
    const auto y = round_trip(t, x);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(y[static_cast<std::size_t>(i)], 0.0f) << dtype_name(t);
  }
}

TEST(Quantize, HugeAndTinyMagnitudesStayFinite) {
  std::mt19937 rng(5);
  for (DType t : kAll) {
    const double bound = t == DType::kQ2_K ? 0.32 : 0.2;  // Q2_K's error on any Gaussian row is 0.27
    for (float sd : {1e3f, 1e-3f}) {  // scales within f16's normal range: precise
      const auto x = gaussian(512, sd, rng);
      const auto y = round_trip(t, x);
      EXPECT_LT(relative_rms_error(x, y), bound) << dtype_name(t) << " sd=" << sd;
    }
    // Scales at f16's edges (subnormal or near its maximum): finite, and never more than twice
    // the row's largest magnitude plus a few f16 subnormal steps (6e-8 each).
    for (float sd : {3e4f, 1e-7f, 1e-30f}) {
      // Q4_1 / Q5_1 store the block's min as f16: below −65504 it is −inf, as in llama.cpp.
      if (sd > 1 && (t == DType::kQ4_1 || t == DType::kQ5_1)) continue;
      const auto x = gaussian(512, sd, rng);
      const auto y = round_trip(t, x);
      float amax = 0;
      for (float v : x) amax = std::max(amax, std::fabs(v));
      for (std::size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << dtype_name(t) << " sd=" << sd;
        ASSERT_LE(std::fabs(y[i]), 2.0f * amax + 1e-6f) << dtype_name(t) << " sd=" << sd << " i=" << i;
      }
      if (sd > 1) {
        EXPECT_LT(relative_rms_error(x, y), bound) << dtype_name(t) << " sd=" << sd;
      }
    }
  }
}

// Q8_0 by the specification's rule: d = max|x| / 127 (f16), q = round(x / d).
TEST(Quantize, Q8_0FollowsTheRoundingRule) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i - 16) * 0.25f;
  BlockQ8_0 b;
  quantize_row(DType::kQ8_0, x.data(), &b, 32);
  EXPECT_EQ(b.d, f32_to_f16(4.0f / 127.0f));
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[16], 0);
  EXPECT_EQ(b.qs[17], static_cast<std::int8_t>(std::round(0.25f * (127.0f / 4.0f))));
}

// Q4_0: the largest-magnitude value maps to level 0 (−8 · d), zero to level 8.
TEST(Quantize, Q4_0FollowsTheRoundingRule) {
  std::vector<float> x(32, 0.0f);
  x[3] = -2.0f;
  x[20] = 1.0f;
  BlockQ4_0 b;
  quantize_row(DType::kQ4_0, x.data(), &b, 32);
  EXPECT_EQ(f16_to_f32(b.d), 0.25f);  // d = −2 / −8
  EXPECT_EQ(b.qs[3] & 15, 0);          // −2 / 0.25 + 8 = 0
  EXPECT_EQ(b.qs[4] >> 4, 12);         // x[20] = 1: 1 / 0.25 + 8 = 12
  EXPECT_EQ(b.qs[0] & 15, 8);
}

TEST(Dequantize, HandBuiltQ8_0AndQ4_0Blocks) {
  BlockQ8_0 a{};
  a.d = f32_to_f16(0.5f);
  for (int i = 0; i < 32; ++i) a.qs[i] = static_cast<std::int8_t>(i - 16);
  float y[32];
  dequantize_row(DType::kQ8_0, &a, y, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * static_cast<float>(i - 16));

  BlockQ4_0 b{};
  b.d = f32_to_f16(2.0f);
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<std::uint8_t>(i | ((15 - i) << 4));
  dequantize_row(DType::kQ4_0, &b, y, 32);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(y[i], 2.0f * static_cast<float>(i - 8));
    EXPECT_EQ(y[i + 16], 2.0f * static_cast<float>(15 - i - 8));
  }
}

// Q4_K: w = d · sc[j] · q − dmin · m[j], the 6-bit values packed as block_formats.h says.
TEST(Dequantize, HandBuiltQ4_KBlock) {
  const int sc[8] = {1, 63, 17, 40, 33, 48, 5, 62};
  const int mn[8] = {0, 9, 63, 2, 50, 16, 31, 44};
  BlockQ4_K b{};
  b.d = f32_to_f16(0.5f);
  b.dmin = f32_to_f16(0.25f);
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = static_cast<std::uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    b.scales[j + 4] = static_cast<std::uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    b.scales[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  int q[256];
  for (int i = 0; i < 256; ++i) q[i] = (i * 7 + 3) % 16;
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      b.qs[32 * c + l] = static_cast<std::uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
    }
  }
  float y[256];
  dequantize_row(DType::kQ4_K, &b, y, 256);
  for (int i = 0; i < 256; ++i) {
    const int j = i / 32;
    EXPECT_EQ(y[i], 0.5f * static_cast<float>(sc[j]) * static_cast<float>(q[i]) -
                        0.25f * static_cast<float>(mn[j]))
        << i;
  }
  // And our quantiser writes the same packing: decoding its block reproduces these weights.
  BlockQ4_K r;
  quantize_row(DType::kQ4_K, y, &r, 256);
  float z[256];
  dequantize_row(DType::kQ4_K, &r, z, 256);
  EXPECT_LT(relative_rms_error(std::vector<float>(y, y + 256), std::vector<float>(z, z + 256)),
            0.05);
}

// Q6_K: w = d · scales[i / 16] · (q − 32), q split into ql nibbles and qh 2-bit pairs.
TEST(Dequantize, HandBuiltQ6_KBlock) {
  BlockQ6_K b{};
  b.d = f32_to_f16(0.125f);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<std::int8_t>(s * 9 - 70);
  int q[256];
  for (int i = 0; i < 256; ++i) q[i] = (i * 13 + 5) % 64;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int* qq = q + 128 * h;
      b.ql[64 * h + l] = static_cast<std::uint8_t>((qq[l] & 15) | ((qq[l + 64] & 15) << 4));
      b.ql[64 * h + l + 32] = static_cast<std::uint8_t>((qq[l + 32] & 15) | ((qq[l + 96] & 15) << 4));
      b.qh[32 * h + l] = static_cast<std::uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) |
                                                   ((qq[l + 64] >> 4) << 4) | ((qq[l + 96] >> 4) << 6));
    }
  }
  float y[256];
  dequantize_row(DType::kQ6_K, &b, y, 256);
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(y[i], 0.125f * static_cast<float>(b.scales[i / 16]) * static_cast<float>(q[i] - 32))
        << i;
  }
  BlockQ6_K r;
  quantize_row(DType::kQ6_K, y, &r, 256);
  float z[256];
  dequantize_row(DType::kQ6_K, &r, z, 256);
  EXPECT_LT(relative_rms_error(std::vector<float>(y, y + 256), std::vector<float>(z, z + 256)),
            0.02);
}

}  // namespace
}  // namespace plexus
