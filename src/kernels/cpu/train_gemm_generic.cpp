// train_gemm with a portable 4×16 register tile (plain loops the compiler may vectorise).
#include "kernels/cpu/train_gemm_impl.h"

namespace plexus {
namespace {

struct GenericTile : train_gemm_detail::ScalarTranspose {
  template <bool kRows>
  static void tile(std::int64_t kc, const float* a, std::int64_t lda, const float* bp, float* c, std::int64_t ldc,
                   bool add) {
    float acc[4][16] = {};
    for (std::int64_t p = 0; p < kc; ++p)
      for (int r = 0; r < 4; ++r) {
        const float av = kRows ? a[r * lda + p] : a[p * 4 + r];
        for (int q = 0; q < 16; ++q) acc[r][q] += av * bp[p * 16 + q];
      }
    for (int r = 0; r < 4; ++r)
      for (int q = 0; q < 16; ++q) c[r * ldc + q] = add ? c[r * ldc + q] + acc[r][q] : acc[r][q];
  }
};

}  // namespace

void train_gemm_generic(ThreadPool* pool, const GemmArgs& g) { train_gemm_detail::gemm<4, 16, GenericTile>(pool, g); }

}  // namespace plexus
