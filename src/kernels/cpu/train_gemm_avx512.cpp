// train_gemm with an AVX-512 12×32 register tile (24 zmm accumulators, two B vectors, one
// broadcast). Compiled with -mavx512f; called only where the CPU has it.
#include <immintrin.h>

#include "kernels/cpu/train_gemm_impl.h"

namespace plexus {
namespace {

constexpr int kMr = 12;

struct Avx512Tile {
  static void tile(std::int64_t kc, const float* ap, const float* bp, float* c, std::int64_t ldc, bool add) {
    __m512 acc[kMr][2];
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (std::int64_t p = 0; p < kc; ++p) {
      const __m512 b0 = _mm512_loadu_ps(bp + p * 32), b1 = _mm512_loadu_ps(bp + p * 32 + 16);
#pragma GCC unroll 12
      for (int r = 0; r < kMr; ++r) {
        const __m512 a = _mm512_set1_ps(ap[p * kMr + r]);
        acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
      }
    }
    for (int r = 0; r < kMr; ++r) {
      float* cr = c + r * ldc;
      if (add) {
        acc[r][0] = _mm512_add_ps(_mm512_loadu_ps(cr), acc[r][0]);
        acc[r][1] = _mm512_add_ps(_mm512_loadu_ps(cr + 16), acc[r][1]);
      }
      _mm512_storeu_ps(cr, acc[r][0]);
      _mm512_storeu_ps(cr + 16, acc[r][1]);
    }
  }
};

}  // namespace

void train_gemm_avx512(ThreadPool& pool, const GemmArgs& g) {
  train_gemm_detail::gemm<kMr, 32, Avx512Tile>(pool, g);
}

}  // namespace plexus
