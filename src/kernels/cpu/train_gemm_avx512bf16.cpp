// train_gemm's bf16 products on AVX512_BF16: a 12×32 register tile of vdpbf16ps (24 zmm
// accumulators, two B vectors of 16 pairs, one broadcast pair of A), in the order of
// train_gemm_bf16_impl.h. Compiled with -mavx512bf16; called only where the CPU has it.
#include "kernels/cpu/avx512_intrinsics.h"
#include "kernels/cpu/train_gemm_bf16_impl.h"

namespace plexus {
namespace {

constexpr int kMr = 12;

struct Avx512Bf16Tile {
  // pack_scalar's panel with vcvtne2ps2bf16 (the same rounding, f32 subnormals to 0 included):
  // lines whose k's are adjacent convert 32 floats to 16 pairs and scatter them W pairs apart;
  // lines that are adjacent convert 16 lines of two k's and interleave them.
  static void pack(const float* src, std::int64_t line_stride, std::int64_t k_stride, std::int64_t lines,
                   std::int64_t W, std::int64_t kc, std::uint16_t* dst) {
    const std::int64_t pairs = (kc + 1) / 2;
    if (k_stride == 1) {
      auto* d32 = reinterpret_cast<std::int32_t*>(dst);
      const __m512i step = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                              _mm512_set1_epi32(static_cast<int>(W)));
      for (std::int64_t L = 0; L < W; ++L) {
        const float* line = src + L * line_stride;
        for (std::int64_t p0 = 0; p0 < 2 * pairs; p0 += 32) {
          __m512i v = _mm512_setzero_si512();
          if (L < lines) {
            const std::int64_t left = kc - p0;
            const auto lo = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << std::max<std::int64_t>(left, 0)) - 1);
            const auto hi = static_cast<__mmask16>(left >= 32 ? 0xffff : left > 16 ? (1u << (left - 16)) - 1 : 0);
            v = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, line + p0 + 16), _mm512_maskz_loadu_ps(lo, line + p0));
          }
          const std::int64_t n = std::min<std::int64_t>(16, pairs - p0 / 2);
          _mm512_mask_i32scatter_epi32(d32 + (p0 / 2) * W + L, static_cast<__mmask16>((1u << n) - 1), step, v, 4);
        }
      }
      return;
    }
    if (line_stride == 1) {
      // Output pair (c, e) of 32 values takes input e·16 + c: the two k's of line c side by side.
      alignas(64) static constexpr std::uint16_t kIdx[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                                              8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
      const __m512i idx = _mm512_load_si512(kIdx);
      for (std::int64_t pp = 0; pp < pairs; ++pp) {
        const std::int64_t p = 2 * pp;
        for (std::int64_t c0 = 0; c0 < W; c0 += 16) {
          const std::int64_t left = std::min(lines, W) - c0, width = std::min<std::int64_t>(16, W - c0);
          const auto m = static_cast<__mmask16>(left >= 16 ? 0xffff : left > 0 ? (1u << left) - 1 : 0);
          const __m512 r0 = _mm512_maskz_loadu_ps(m, src + p * k_stride + c0);
          const __m512 r1 = p + 1 < kc ? _mm512_maskz_loadu_ps(m, src + (p + 1) * k_stride + c0) : _mm512_setzero_ps();
          const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(r1, r0);
          const auto out = static_cast<__mmask32>(width >= 16 ? 0xffffffffu : (1u << (2 * width)) - 1);
          _mm512_mask_storeu_epi16(dst + pp * W * 2 + c0 * 2, out, _mm512_permutexvar_epi16(idx, both));
        }
      }
      return;
    }
    train_gemm_bf16_detail::pack_scalar(src, line_stride, k_stride, lines, W, kc, dst);
  }

  static void tile(std::int64_t pairs, const std::uint16_t* ap, const std::uint16_t* bp, float* c, std::int64_t ldc,
                   bool add) {
    __m512 acc[kMr][2];
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int r = 0; r < kMr; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_T0);
    }
    for (std::int64_t p = 0; p < pairs; ++p) {
      const auto b0 = (__m512bh)_mm512_loadu_si512(bp + p * 64);
      const auto b1 = (__m512bh)_mm512_loadu_si512(bp + p * 64 + 32);
      const std::uint16_t* a = ap + p * kMr * 2;
#define PLEXUS_TRAIN_GEMM_BF16_ROW(r)                                               \
  {                                                                                 \
    const auto av = (__m512bh)_mm512_broadcastd_epi32(_mm_loadu_si32(a + (r) * 2)); \
    acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);                                \
    acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);                                \
  }
      PLEXUS_TRAIN_GEMM_BF16_ROW(0)
      PLEXUS_TRAIN_GEMM_BF16_ROW(1)
      PLEXUS_TRAIN_GEMM_BF16_ROW(2)
      PLEXUS_TRAIN_GEMM_BF16_ROW(3)
      PLEXUS_TRAIN_GEMM_BF16_ROW(4)
      PLEXUS_TRAIN_GEMM_BF16_ROW(5)
      PLEXUS_TRAIN_GEMM_BF16_ROW(6)
      PLEXUS_TRAIN_GEMM_BF16_ROW(7)
      PLEXUS_TRAIN_GEMM_BF16_ROW(8)
      PLEXUS_TRAIN_GEMM_BF16_ROW(9)
      PLEXUS_TRAIN_GEMM_BF16_ROW(10)
      PLEXUS_TRAIN_GEMM_BF16_ROW(11)
#undef PLEXUS_TRAIN_GEMM_BF16_ROW
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

void train_gemm_bf16_avx512bf16(ThreadPool* pool, const GemmArgs& g) {
  train_gemm_bf16_detail::gemm<kMr, 32, Avx512Bf16Tile>(pool, g);
}

}  // namespace plexus
