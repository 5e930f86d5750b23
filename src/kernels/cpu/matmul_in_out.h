// The matrix product against weights stored (in, out) and read in place (WeightMatrix::in_out:
// GPT-2's Conv1D weights), the part of matmul (kernels/cpu/matmul.h) that runs such a weight.
#pragma once
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/weight_matrix.h"

namespace plexus {

// Output columns [r0, r1) of p.y (n, p.ldy) = x (n, ldx) · p.wᵀ, p.w.in_out() (F32, BF16 or F16).
// The stored rows (one input feature each: the weights of every output, contiguous) go in blocks
// of kInOutDepth inputs × kInOutWidth outputs, converted to f32 once (k.to_f32; f32 weights in
// place) and read by every token: each token's sums over the block in registers
// (k.weighted_rows, one FMA chain from zero), added to y block after block. The weights are read
// from memory once whatever n (decode streams them; prefill reuses each block from cache), and
// the order of the sums is fixed by the blocks: the same bits for any split of the columns
// (threads), any n and every ISA. Under kInOutDirectTokens tokens (decode) the x86 tables skip
// the f32 block: each token's sums over a block are taken 8 stored rows at a time, the whole
// column range contiguously, the weights converted in registers (AVX2/F16C, 16 lanes on the
// avx512 tables) — the same FMA chains.
void matmul_in_out_columns(const IsaKernels& k, const MatmulPart& p, std::int64_t r0, std::int64_t r1, const float* x,
                           std::int64_t n, std::int64_t ldx);

constexpr std::int64_t kInOutWidth = 256;  // outputs per block
constexpr std::int64_t kInOutDepth = 32;   // inputs per block: 32 KiB of f32, in L1
constexpr std::int64_t kInOutDirectTokens = 4;

}  // namespace plexus
