// Test data in the block formats: rows of random weights quantised (Q8_0, Q4_0 through
// quantize_row) or random blocks with sane f16 scales (Q4_K, Q6_K: every bit pattern of the
// quants, scales and mins occurs), and their f32 values through dequantize_row (the oracle).
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/block_formats.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize.h"

namespace plexus::testing_blocks {

// rows x cols weights of block format `t` (cols a multiple of its block): dtype_row_bytes each.
inline std::vector<std::uint8_t> random_block_rows(DType t, std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
  const std::int64_t row_bytes = dtype_row_bytes(t, cols);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(rows * row_bytes));
  std::uniform_real_distribution<float> w(-1.0f, 1.0f), scale(0.002f, 0.02f);
  if (t == DType::kQ8_0 || t == DType::kQ4_0) {
    std::vector<float> src(static_cast<std::size_t>(cols));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (float& v : src) v = w(rng) * scale(rng) * 50.0f;
      quantize_row(t, src.data(), out.data() + r * row_bytes, cols);
    }
    return out;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::uint8_t& b : out) b = static_cast<std::uint8_t>(byte(rng));
  const std::int64_t nb = rows * (cols / 256);
  for (std::int64_t i = 0; i < nb; ++i) {
    if (t == DType::kQ4_K) {
      auto* b = reinterpret_cast<BlockQ4_K*>(out.data() + i * static_cast<std::int64_t>(sizeof(BlockQ4_K)));
      const std::uint16_t d = f32_to_f16(scale(rng) * 0.1f), dmin = f32_to_f16(scale(rng) * 0.1f);
      std::memcpy(&b->d, &d, 2);
      std::memcpy(&b->dmin, &dmin, 2);
    } else {
      auto* b = reinterpret_cast<BlockQ6_K*>(out.data() + i * static_cast<std::int64_t>(sizeof(BlockQ6_K)));
      const std::uint16_t d = f32_to_f16(scale(rng) * 0.05f);
      std::memcpy(&b->d, &d, 2);
    }
  }
  return out;
}

// The f32 values of rows x cols weights of block format `t`.
inline std::vector<float> dequantized(DType t, const std::vector<std::uint8_t>& bytes, std::int64_t rows, std::int64_t cols) {
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  const std::int64_t row_bytes = dtype_row_bytes(t, cols);
  for (std::int64_t r = 0; r < rows; ++r) dequantize_row(t, bytes.data() + r * row_bytes, out.data() + r * cols, cols);
  return out;
}

}  // namespace plexus::testing_blocks
