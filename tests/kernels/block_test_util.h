// Test data in the block formats: rows of random weights quantised (Q8_0, Q4_0 through
// quantize_row) or random blocks with sane f16 scales (every other format: every bit pattern of
// the quants, scales and mins occurs; MXFP4's E8M0 scales 2^-9..2^-6), and their f32 values
// through dequantize_row (the oracle).
#pragma once
#include <cstddef>
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
  // Random bytes (every bit of the codes, scales and mins), then sane f16 super-scales.
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::uint8_t& b : out) b = static_cast<std::uint8_t>(byte(rng));
  const std::int64_t block = dtype_block_bytes(t), nb = rows * row_bytes / block;
  for (std::int64_t i = 0; i < nb; ++i) {
    std::uint8_t* b = out.data() + i * block;
    auto put = [&](std::size_t offset, float v) {
      const std::uint16_t h = f32_to_f16(v);
      std::memcpy(b + offset, &h, 2);
    };
    switch (t) {
      case DType::kQ4_1:  // d, then the offset m (either sign)
      case DType::kQ5_1:
        put(0, scale(rng));
        put(2, w(rng) * scale(rng) * 8.0f);
        break;
      case DType::kQ5_0:
      case DType::kIQ4_NL: put(0, scale(rng) * (t == DType::kIQ4_NL ? 0.1f : 1.0f)); break;
      case DType::kQ2_K:  // d and dmin at the end
        put(offsetof(BlockQ2_K, d), scale(rng) * 0.1f);
        put(offsetof(BlockQ2_K, dmin), scale(rng) * 0.1f);
        break;
      case DType::kQ3_K: put(offsetof(BlockQ3_K, d), scale(rng) * 0.05f); break;
      case DType::kQ4_K:
      case DType::kQ5_K:
        put(0, scale(rng) * 0.1f);
        put(2, scale(rng) * 0.1f);
        break;
      case DType::kQ6_K: put(offsetof(BlockQ6_K, d), scale(rng) * 0.05f); break;
      case DType::kIQ4_XS: put(0, scale(rng) * 0.005f); break;
      case DType::kMXFP4: b[0] = static_cast<std::uint8_t>(118 + byte(rng) % 4); break;
      case DType::kQ8_0:
      case DType::kQ4_0:
      case DType::kF32:
      case DType::kBF16:
      case DType::kF16: break;
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
