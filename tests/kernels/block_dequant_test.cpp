// The CUDA block kernels' index math (kernels/block_dequant.h, compiled here for the host)
// against quantize.cpp's dequantize_row: every 8-weight group of several blocks of each format,
// as dequant8 gives it and as affine8's a * raw + b.
#include "kernels/block_dequant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "block_test_util.h"

namespace plexus {
namespace {

template <typename F>
void expect_matches_dequantize_row(DType t, std::int64_t cols) {
  std::mt19937 rng(7);
  const std::int64_t rows = 3;
  const std::vector<std::uint8_t> bytes = testing_blocks::random_block_rows(t, rows, cols, rng);
  const std::vector<float> want = testing_blocks::dequantized(t, bytes, rows, cols);
  const std::int64_t row_bytes = dtype_row_bytes(t, cols);
  ASSERT_EQ(row_bytes, cols / F::kElems * F::kBytes);
  int nonzero = 0;
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
      }
    }
  }
  EXPECT_GT(nonzero, rows * cols / 2) << "the test data is mostly zeros";
}

TEST(BlockDequant, Q8_0MatchesDequantizeRow) { expect_matches_dequantize_row<blocks::Q8_0>(DType::kQ8_0, 32 * 11); }
TEST(BlockDequant, Q4_0MatchesDequantizeRow) { expect_matches_dequantize_row<blocks::Q4_0>(DType::kQ4_0, 32 * 11); }
TEST(BlockDequant, Q4_KMatchesDequantizeRow) { expect_matches_dequantize_row<blocks::Q4_K>(DType::kQ4_K, 256 * 3); }
TEST(BlockDequant, Q6_KMatchesDequantizeRow) { expect_matches_dequantize_row<blocks::Q6_K>(DType::kQ6_K, 256 * 3); }

}  // namespace
}  // namespace plexus
