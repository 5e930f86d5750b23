// Quantisation of f32 rows into the GGUF block formats (kernels/block_formats.h): plain scalar
// code, used to quantise checkpoints (on load and by `plexus quantize`). The way back is the
// oracle kernels/ref/dequantize.h.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace plexus {

// dst (dtype_row_bytes(t, n) bytes) = src (n) quantised to block format `t`; n a multiple of t's
// block. (F32, BF16 and F16 are plain conversions, rounding to nearest even.) Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS and MXFP4 are byte-identical to llama.cpp's
// quantisation of the same f32 values without an importance matrix (`llama-quantize`):
//   Q8_0: d = max|x| / 127, q = round(x / d) (halves away from zero), computed as x · (1/d).
//   Q4_0 / Q5_0: m = the x of largest |x| (first on ties), d = m / −8 (−16),
//     q = min(15 (31), trunc(x · (1/d) + 8.5 (16.5))).
//   Q4_1 / Q5_1: d = (max − min) / 15 (31), offset min, q = trunc((x − min) · (1/d) + 0.5).
//   IQ4_NL / IQ4_XS: a search over 16 candidate scales per block of 32 (quantize_iq4.cpp).
//   MXFP4: e = floor(log2(max|x|)) − 2 + 127 (clamped to 0..254; 0 for zeros), the OCP rule that
//     puts max|x| in [4, 8) times 2^(e − 127), so values above 6 times it clamp to 6 (up to 25 %
//     off); each weight the nearest E2M1 value (ties to the smaller magnitude).
// Scales are stored as f16 (round to nearest even; MXFP4's as its exponent byte); 1/d is 0 when d is 0.
// Q2_K, Q3_K, Q4_K, Q5_K and Q6_K: our own least-squares search per sub-block (quantize_k.cpp):
// scales (and mins, w = d·sc·q − dmin·m, min ≥ 0) fitted per sub-block, then quantised against
// the super-block scales (Q2_K 4 bits, Q3_K/Q4_K/Q5_K 6 bits, Q6_K int8), and the weights
// re-rounded with the scales they decode with.
void quantize_row(DType t, const float* src, void* dst, std::int64_t n);

}  // namespace plexus
