// Activations quantised to 8 bits for products with block-format weights: the layouts the
// quantised dot kernels read, and the one quantiser every ISA shares.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace plexus {

// x blocks of 32 (for the formats with blocks of 32): x[i] ≈ d · q[i].
struct XBlock32 {
  float d;
  std::int8_t q[32];
};
static_assert(sizeof(XBlock32) == 36);

// x blocks of 256 (for the super-block formats): x[i] ≈ d · q[i]; sums[j] = sum of q over
// elements 32j..32j+31 (for Q4_K's and Q5_K's mins), sums16[s] over elements 16s..16s+15 (Q2_K's).
struct XBlock256 {
  float d;
  std::int16_t sums[8];
  std::int8_t q[256];
  std::int16_t sums16[16];
};
static_assert(sizeof(XBlock256) == 308);

// The x block size a weight block format multiplies against: its own block (32 or 256).
std::int64_t qx_block_elems(DType wt);
// Bytes of one token's quantised activations of `cols` elements (cols a multiple of the block).
std::int64_t qx_row_bytes(DType wt, std::int64_t cols);

// out (n rows of qx_row_bytes(wt, cols)) = x (n, ldx) quantised per block: d = max|x| / 127,
// q = x · (1/d) rounded to nearest even, clamped to ±127 (d = 0: all q = 0). Plain scalar code:
// every table uses it, so every ISA multiplies the same integers.
void quantize_x(DType wt, const float* x, std::int64_t ldx, std::int64_t n, std::int64_t cols, void* out);

}  // namespace plexus
