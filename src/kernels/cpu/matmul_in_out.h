// The matrix product against weights stored (in, out) and read in place (WeightMatrix::in_out:
// GPT-2's Conv1D weights), the part of matmul (kernels/cpu/matmul.h) that runs such a weight.
#pragma once
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/weight_matrix.h"

namespace plexus {

// Output columns [r0, r1) of p.y (n, p.ldy) = x (n, ldx) · p.wᵀ, p.w.in_out() (F32, BF16 or F16).
// Each stored row (one input feature: the weights of every output, contiguous) adds x[t, c]
// times its segment [r0, r1) to y[t] (k.axpy), the segment converted to f32 (k.to_f32) unless
// the weight is f32 (f32 decode: k.weighted_rows, the same sums in registers). Under kInOutStreamTokens tokens (decode) every segment is read once and
// used at once; from it (prefill), a block of kInOutDepth inputs × kInOutWidth outputs is
// converted once and reused by every token from cache. Each output is summed in input order,
// one f32 accumulator: the same bits for any split of the columns (threads) and any n.
void matmul_in_out_columns(const IsaKernels& k, const MatmulPart& p, std::int64_t r0, std::int64_t r1, const float* x,
                           std::int64_t n, std::int64_t ldx);

constexpr std::int64_t kInOutStreamTokens = 4;
constexpr std::int64_t kInOutWidth = 256;  // output columns per pass: n rows of accumulators, 1 KiB each
constexpr std::int64_t kInOutDepth = 64;   // inputs per converted prefill block: 64 KiB of f32

}  // namespace plexus
