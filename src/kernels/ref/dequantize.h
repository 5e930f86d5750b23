// The dequantisation oracle: every GGUF block format (kernels/block_formats.h) back to f32, plain
// scalar code following the format's definition, one block at a time (the value of each weight is
// the f32 expression GGUF's reference decoder computes, so the result is exact and the same
// everywhere). The SIMD and CUDA kernels are tested against it; it also dequantises rows where
// speed does not matter (embedding gathers, prefill tiles of rare formats).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace plexus {

// dst (n) = the values of n elements of block format `t` at src; n a multiple of t's block.
void dequantize_row(DType t, const void* src, float* dst, std::int64_t n);

}  // namespace plexus
