// The CUDA block kernels' index math (kernels/block_dequant.h, compiled here for the host)
// against the oracle dequantize_row (kernels/ref): every 8-weight group of rows of an odd number
// of blocks (so rows start at odd block offsets, 2-byte but not 16-byte aligned) of each format,
// as dequant8 gives it and as affine8's a * raw + b; random blocks set every bit of the codes,
// scales and mins.
#include "kernels/block_dequant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "block_test_util.h"

namespace plexus {
namespace {

template <typename F>
void expect_matches_dequantize_row(DType t, std::int64_t cols) {
  std::mt19937 rng(7);
  const std::int64_t rows = 5;
  const std::vector<std::uint8_t> bytes = testing_blocks::random_block_rows(t, rows, cols, rng);
  const std::vector<float> want = testing_blocks::dequantized(t, bytes, rows, cols);
  const std::int64_t row_bytes = dtype_row_bytes(t, cols);
  ASSERT_EQ(row_bytes, cols / F::kElems * F::kBytes);
  ASSERT_EQ(F::kElems, dtype_block_elems(t));
  int nonzero = 0;
  std::vector<int> codes_seen(256, 0);  // raw's mantissa codes met: every code of the format occurs
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t e = 0; e < cols; e += 8) {
      float got[8];
      F::dequant8(bytes.data() + r * row_bytes, e, got);
      for (int k = 0; k < 8; ++k) {
        const float w = want[static_cast<std::size_t>(r * cols + e + k)];
        // One rounding apart at most (the CPU may fuse d·q − m into one FMA).
        ASSERT_NEAR(got[k], w, 1e-6 * std::fabs(w) + 1e-9) << dtype_name(t) << " row " << r << " weight " << e + k;
        nonzero += w != 0.0f;
      }
      // The GEMV's affine form: a * raw + b, raw in [1, 2).
      float raw[8], a = 0, b = 0;
      F::affine8(bytes.data() + r * row_bytes, e, raw, &a, &b);
      for (int k = 0; k < 8; ++k) {
        const float w = want[static_cast<std::size_t>(r * cols + e + k)];
        ASSERT_TRUE(raw[k] >= 1.0f && raw[k] < 2.0f) << dtype_name(t) << " raw " << raw[k];
        const double got_affine = static_cast<double>(a) * raw[k] + b;
        ASSERT_NEAR(got_affine, w, 1e-6 * (std::fabs(a) + std::fabs(b)) + 1e-9)
            << dtype_name(t) << " affine8 row " << r << " weight " << e + k << " a " << a << " b " << b;
        ++codes_seen[static_cast<std::size_t>((raw[k] - 1.0f) * 256.0f)];  // the code's top 8 bits
      }
    }
  }
  EXPECT_GT(nonzero, rows * cols / 2) << "the test data is mostly zeros";
  EXPECT_GE(std::count_if(codes_seen.begin(), codes_seen.end(), [](int n) { return n > 0; }), 4)
      << dtype_name(t) << ": raw takes few values";
}

// Rows of 11 blocks of 32 or 3 super-blocks of 256.
template <typename F>
void expect_tag_matches(DType t) {
  expect_matches_dequantize_row<F>(t, F::kElems == 32 ? 32 * 11 : 256 * 3);
}

TEST(BlockDequant, Q8_0MatchesDequantizeRow) { expect_tag_matches<blocks::Q8_0>(DType::kQ8_0); }
TEST(BlockDequant, Q4_0MatchesDequantizeRow) { expect_tag_matches<blocks::Q4_0>(DType::kQ4_0); }
TEST(BlockDequant, Q4_1MatchesDequantizeRow) { expect_tag_matches<blocks::Q4_1>(DType::kQ4_1); }
TEST(BlockDequant, Q5_0MatchesDequantizeRow) { expect_tag_matches<blocks::Q5_0>(DType::kQ5_0); }
TEST(BlockDequant, Q5_1MatchesDequantizeRow) { expect_tag_matches<blocks::Q5_1>(DType::kQ5_1); }
TEST(BlockDequant, IQ4_NLMatchesDequantizeRow) { expect_tag_matches<blocks::IQ4_NL>(DType::kIQ4_NL); }
TEST(BlockDequant, Q2_KMatchesDequantizeRow) { expect_tag_matches<blocks::Q2_K>(DType::kQ2_K); }
TEST(BlockDequant, Q3_KMatchesDequantizeRow) { expect_tag_matches<blocks::Q3_K>(DType::kQ3_K); }
TEST(BlockDequant, Q4_KMatchesDequantizeRow) { expect_tag_matches<blocks::Q4_K>(DType::kQ4_K); }
TEST(BlockDequant, Q5_KMatchesDequantizeRow) { expect_tag_matches<blocks::Q5_K>(DType::kQ5_K); }
TEST(BlockDequant, Q6_KMatchesDequantizeRow) { expect_tag_matches<blocks::Q6_K>(DType::kQ6_K); }
TEST(BlockDequant, IQ4_XSMatchesDequantizeRow) { expect_tag_matches<blocks::IQ4_XS>(DType::kIQ4_XS); }
// 11 blocks of 17 bytes: every other row starts at an odd address.
TEST(BlockDequant, MXFP4MatchesDequantizeRow) { expect_tag_matches<blocks::MXFP4>(DType::kMXFP4); }

// with_block_tag (the CUDA launch switches) gives each block format its own tag, sized as the
// format, and nothing for the element types.
TEST(BlockDequant, EveryBlockFormatHasATag) {
  for (DType t : kBlockFormats) {
    int calls = 0;
    EXPECT_TRUE(blocks::with_block_tag(t, [&](auto tag) {
      using F = decltype(tag);
      ++calls;
      EXPECT_EQ(F::kBytes, dtype_block_bytes(t)) << dtype_name(t);
      EXPECT_EQ(F::kElems, dtype_block_elems(t)) << dtype_name(t);
      EXPECT_NEAR(F::kTileBlocks * F::kBytes, 2048, 400) << dtype_name(t);
    }));
    EXPECT_EQ(calls, 1) << dtype_name(t);
  }
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    EXPECT_FALSE(blocks::with_block_tag(t, [](auto) { ADD_FAILURE() << "a tag for an element type"; }));
  }
}

// The IQ4 grid without a table in memory: iq4_biased(q) = kIq4Values[q] + 128 for every code.
TEST(BlockDequant, Iq4GridBytesAreTheGrid) {
  for (std::uint32_t q = 0; q < 16; ++q) {
    EXPECT_EQ(static_cast<int>(blocks::iq4_biased(q)), kIq4Values[q] + 128) << "code " << q;
  }
}

// The same for MXFP4's doubled E2M1 values: mxfp4_biased(q) = kMxfp4Values[q] + 12, and those are
// twice sign · {0, 0.5, 1, 1.5, 2, 3, 4, 6} (bit 3 the sign, bits 1..2 the exponent, bit 0 the
// mantissa).
TEST(BlockDequant, Mxfp4GridBytesAreTheDoubledE2M1Values) {
  for (std::uint32_t q = 0; q < 16; ++q) {
    EXPECT_EQ(static_cast<int>(blocks::mxfp4_biased(q)), kMxfp4Values[q] + 12) << "code " << q;
    const int exp = static_cast<int>((q >> 1) & 3), mant = static_cast<int>(q & 1);
    const double e2m1 = exp == 0 ? 0.5 * mant : std::ldexp(1.0 + 0.5 * mant, exp - 1);
    EXPECT_EQ(kMxfp4Values[q], (q & 8u ? -2 : 2) * e2m1) << "code " << q;
  }
}

}  // namespace
}  // namespace plexus
