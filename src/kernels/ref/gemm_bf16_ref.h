// The oracle of train_gemm's bf16 products (GemmArgs::bf16): the same sums in the same order,
// written plainly, one element of C at a time.
#pragma once
#include <cstdint>

namespace plexus {

// C (m, n) = or += A · B with A (i, p) = a[i·a_rs + p·a_cs] and B (p, j) = b[p·b_rs + j·b_cs]
// rounded to bf16 (f32_to_bf16_ftz): for each block of 256 k's from zero, acc = 0, then per pair
// (p, p + 1) of the block (a zero past its end) acc = fma(A(i, p+1), B(p+1, j), acc) and acc =
// fma(A(i, p), B(p, j), acc), subnormal results flushed to ±0 (vdpbf16ps's lane); C = acc for
// the first block without `accumulate`, else C + acc.
void gemm_bf16_ref(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t a_rs,
                   std::int64_t a_cs, const float* b, std::int64_t b_rs, std::int64_t b_cs, float* c, std::int64_t ldc,
                   bool accumulate);

}  // namespace plexus
