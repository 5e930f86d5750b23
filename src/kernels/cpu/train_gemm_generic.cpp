// train_gemm with a portable 4×16 register tile (plain loops the compiler may vectorise), and the
// plain emulation of vdpbf16ps for the bf16 products of CPUs without AVX512_BF16 (the same bits).
#include <cfloat>
#include <cmath>

#include "kernels/cpu/train_gemm_bf16_impl.h"
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

// acc + a · b rounded once, a subnormal result flushed to ±0: one half of a vdpbf16ps lane.
inline float fma_ftz(float a, float b, float acc) {
  const float r = std::fma(a, b, acc);
  return std::fabs(r) < FLT_MIN ? std::copysign(0.0f, r) : r;
}

struct GenericBf16Tile : train_gemm_bf16_detail::ScalarPack {
  static void tile(std::int64_t pairs, const std::uint16_t* ap, const std::uint16_t* bp, float* c, std::int64_t ldc,
                   bool add) {
    float acc[4][16] = {};
    for (std::int64_t p = 0; p < pairs; ++p)
      for (int r = 0; r < 4; ++r) {
        const float a0 = bf16_to_f32(ap[p * 8 + r * 2]), a1 = bf16_to_f32(ap[p * 8 + r * 2 + 1]);
        for (int q = 0; q < 16; ++q) {
          acc[r][q] = fma_ftz(a1, bf16_to_f32(bp[p * 32 + q * 2 + 1]), acc[r][q]);
          acc[r][q] = fma_ftz(a0, bf16_to_f32(bp[p * 32 + q * 2]), acc[r][q]);
        }
      }
    for (int r = 0; r < 4; ++r)
      for (int q = 0; q < 16; ++q) c[r * ldc + q] = add ? c[r * ldc + q] + acc[r][q] : acc[r][q];
  }
};

}  // namespace

void train_gemm_generic(ThreadPool* pool, const GemmArgs& g) { train_gemm_detail::gemm<4, 16, GenericTile>(pool, g); }

void train_gemm_bf16_generic(ThreadPool* pool, const GemmArgs& g) {
  train_gemm_bf16_detail::gemm<4, 16, GenericBf16Tile>(pool, g);
}

}  // namespace plexus
