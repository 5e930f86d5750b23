// Quantisation of f32 rows into the GGUF block formats (kernels/block_formats.h): plain scalar
// code, used to quantise checkpoints (on load and by `plexus quantize`). The way back is the
// oracle kernels/ref/dequantize.h.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace plexus {

// dst (dtype_row_bytes(t, n) bytes) = src (n) quantised to block format `t`; n a multiple of t's
// block. Q8_0 and Q4_0 follow the specification's round-to-nearest rules, so they are bit-identical
// to llama.cpp's reference quantisation of the same f32 values:
//   Q8_0: d = max|x| / 127, q = round(x / d) (halves away from zero), computed as x · (1/d).
//   Q4_0: m = the x of largest |x| (first on ties), d = m / −8, q = min(15, trunc(x · (1/d) + 8.5)).
// Scales are stored as f16 (round to nearest even); 1/d is 0 when d is 0.
// Q4_K and Q6_K: our own least-squares search per sub-block (quantize.cpp): Q4_K sub-block
// scales and mins (min ≥ 0, w = d·sc·q − dmin·m) in 6 bits under d = max scale / 63 and
// dmin = max min / 63; Q6_K sub-block scales in int8 under d = max|scale| / 127 ≥ 0, each keeping
// its sign; the weights re-rounded with the decoded scales.
void quantize_row(DType t, const float* src, void* dst, std::int64_t n);

}  // namespace plexus
