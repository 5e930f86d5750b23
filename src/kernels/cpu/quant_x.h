// Activations quantised to 8 bits for products with block-format weights (Q8_0, Q4_0, Q4_K,
// Q6_K): the layouts the quantised dot kernels read, and the one quantiser every ISA shares.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace plexus {

// x blocks of 32 (for Q8_0 and Q4_0 weights): x[i] ≈ d · q[i].
struct XBlock32 {
  float d;
  std::int8_t q[32];
};
static_assert(sizeof(XBlock32) == 36);

// x blocks of 256 (for Q4_K and Q6_K weights): x[i] ≈ d · q[i]; sums[j] = sum of q over
// elements 32j..32j+31 (for Q4_K's mins).
struct XBlock256 {
  float d;
  std::int16_t sums[8];
  std::int8_t q[256];
};
static_assert(sizeof(XBlock256) == 276);

// The x block size a weight block format multiplies against: 32 (Q8_0, Q4_0) or 256 (Q4_K, Q6_K).
std::int64_t qx_block_elems(DType wt);
// Bytes of one token's quantised activations of `cols` elements (cols a multiple of the block).
std::int64_t qx_row_bytes(DType wt, std::int64_t cols);

// out (n rows of qx_row_bytes(wt, cols)) = x (n, ldx) quantised per block: d = max|x| / 127,
// q = x · (1/d) rounded to nearest even, clamped to ±127 (d = 0: all q = 0). Plain scalar code:
// every table uses it, so every ISA multiplies the same integers.
void quantize_x(DType wt, const float* x, std::int64_t ldx, std::int64_t n, std::int64_t cols, void* out);

}  // namespace plexus
