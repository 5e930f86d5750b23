// train_gemm with an AVX2 + FMA 6×16 register tile (12 ymm accumulators). Compiled with
// -mavx2 -mfma; called only where the CPU has them.
#include <immintrin.h>

#include "kernels/cpu/train_gemm_impl.h"

namespace plexus {
namespace {

struct Avx2Tile : train_gemm_detail::ScalarTranspose {
  template <bool kRows>
  static void tile(std::int64_t kc, const float* a, std::int64_t lda, const float* bp, float* c, std::int64_t ldc,
                   bool add) {
    constexpr int kMr = 6;
    __m256 acc[kMr][2];
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (std::int64_t p = 0; p < kc; ++p) {
      const __m256 b0 = _mm256_loadu_ps(bp + p * 16), b1 = _mm256_loadu_ps(bp + p * 16 + 8);
#pragma GCC unroll 6
      for (int r = 0; r < kMr; ++r) {
        const __m256 av = _mm256_broadcast_ss(kRows ? a + r * lda + p : a + p * kMr + r);
        acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
      }
    }
    for (int r = 0; r < kMr; ++r) {
      float* cr = c + r * ldc;
      if (add) {
        acc[r][0] = _mm256_add_ps(_mm256_loadu_ps(cr), acc[r][0]);
        acc[r][1] = _mm256_add_ps(_mm256_loadu_ps(cr + 8), acc[r][1]);
      }
      _mm256_storeu_ps(cr, acc[r][0]);
      _mm256_storeu_ps(cr + 8, acc[r][1]);
    }
  }
};

}  // namespace

void train_gemm_avx2(ThreadPool* pool, const GemmArgs& g) { train_gemm_detail::gemm<6, 16, Avx2Tile>(pool, g); }

}  // namespace plexus
