// gemm_bf16_ref: train_gemm's bf16 order, element by element.
#include "kernels/ref/gemm_bf16_ref.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/dtype.h"

namespace plexus {

namespace {

constexpr std::int64_t kBlock = 256;

float bf16(float v) { return round_to_bf16(v); }

float fma_ftz(float a, float b, float acc) {
  const float r = std::fma(a, b, acc);
  return std::fabs(r) < FLT_MIN ? std::copysign(0.0f, r) : r;
}

}  // namespace

void gemm_bf16_ref(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t a_rs,
                   std::int64_t a_cs, const float* b, std::int64_t b_rs, std::int64_t b_cs, float* c, std::int64_t ldc,
                   bool accumulate) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float& out = c[i * ldc + j];
      if (!accumulate) out = 0;
      for (std::int64_t k0 = 0; k0 < k; k0 += kBlock) {
        const std::int64_t k1 = std::min(k, k0 + kBlock);
        const auto A = [&](std::int64_t p) { return p < k1 ? bf16(a[i * a_rs + p * a_cs]) : 0.0f; };
        const auto B = [&](std::int64_t p) { return p < k1 ? bf16(b[p * b_rs + j * b_cs]) : 0.0f; };
        float acc = 0;
        for (std::int64_t p = k0; p < k1; p += 2) {
          acc = fma_ftz(A(p + 1), B(p + 1), acc);
          acc = fma_ftz(A(p), B(p), acc);
        }
        out = (k0 == 0 && !accumulate) ? acc : out + acc;
      }
    }
}

}  // namespace plexus
