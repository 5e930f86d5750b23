// train_gemm with an AVX-512 12×32 register tile (24 zmm accumulators, two B vectors, one
// broadcast). Compiled with -mavx512f; called only where the CPU has it.
#include "kernels/cpu/avx512_intrinsics.h"
#include "kernels/cpu/train_gemm_impl.h"

namespace plexus {
namespace {

constexpr int kMr = 12;

// out[p * ldo + r] = in[r * ldi + p] for r, p < 16; rows at and past `rows` read as zero; the
// stores write the lanes of `width`.
inline void transpose16(const float* in, std::int64_t ldi, std::int64_t rows, float* out, std::int64_t ldo,
                        __mmask16 width) {
  __m512 r[16], t[16], u[16], v[16];
  for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(in + i * ldi) : _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // u[4i + c], 128-bit lane L: rows 4i..4i+3 at column 4L + c.
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < 4; ++c) {
      v[8 * i + c] = _mm512_shuffle_f32x4(u[8 * i + c], u[8 * i + 4 + c], 0x88);
      v[8 * i + 4 + c] = _mm512_shuffle_f32x4(u[8 * i + c], u[8 * i + 4 + c], 0xdd);
    }
  for (int c = 0; c < 8; ++c) {
    _mm512_mask_storeu_ps(out + c * ldo, width, _mm512_shuffle_f32x4(v[c], v[8 + c], 0x88));
    _mm512_mask_storeu_ps(out + (c + 8) * ldo, width, _mm512_shuffle_f32x4(v[c], v[8 + c], 0xdd));
  }
}

struct Avx512Tile {
  // dst[p * ld_dst + r] = src[r * ld_src + p]: 16×16 blocks in registers, the last k scalar.
  static void transpose(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t kc, float* dst,
                        std::int64_t ld_dst) {
    const std::int64_t kv = kc / 16 * 16;
    for (std::int64_t r0 = 0; r0 < rows; r0 += 16) {
      const std::int64_t nr = std::min<std::int64_t>(16, rows - r0);
      const auto width = static_cast<__mmask16>((1u << nr) - 1);
      for (std::int64_t p = 0; p < kv; p += 16)
        transpose16(src + r0 * ld_src + p, ld_src, nr, dst + p * ld_dst + r0, ld_dst, width);
    }
    train_gemm_detail::transpose_scalar(src + kv, ld_src, rows, kc - kv, dst + kv * ld_dst, ld_dst);
  }
  // A (r, p) = a[r * lda + p] (kRows: rows of a row-major matrix, read in place) or a[p * kMr + r].
  template <bool kRows>
  static void tile(std::int64_t kc, const float* a, std::int64_t lda, const float* bp, float* c, std::int64_t ldc,
                   bool add) {
    __m512 acc[kMr][2];
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    // C's lines arrive while the products run (C is often out of cache: dw of a large weight).
    for (int r = 0; r < kMr; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_T0);
    }
    for (std::int64_t p = 0; p < kc; ++p) {
      const __m512 b0 = _mm512_loadu_ps(bp + p * 32), b1 = _mm512_loadu_ps(bp + p * 32 + 16);
      // Rows mode: two base pointers and lda, 3·lda in registers address all twelve rows.
      const float* q0 = kRows ? a + p : a + p * kMr;
      const float* q6 = kRows ? q0 + 6 * lda : q0 + 6;
      const std::int64_t l1 = kRows ? lda : 1, l3 = 3 * l1;
#define PLEXUS_TRAIN_GEMM_ROW(r, ptr)               \
  {                                                 \
    const __m512 av = _mm512_set1_ps(*(ptr));       \
    acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]); \
    acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]); \
  }
      PLEXUS_TRAIN_GEMM_ROW(0, q0)
      PLEXUS_TRAIN_GEMM_ROW(1, q0 + l1)
      PLEXUS_TRAIN_GEMM_ROW(2, q0 + 2 * l1)
      PLEXUS_TRAIN_GEMM_ROW(3, q0 + l3)
      PLEXUS_TRAIN_GEMM_ROW(4, q0 + 4 * l1)
      PLEXUS_TRAIN_GEMM_ROW(5, q0 + l3 + 2 * l1)
      PLEXUS_TRAIN_GEMM_ROW(6, q6)
      PLEXUS_TRAIN_GEMM_ROW(7, q6 + l1)
      PLEXUS_TRAIN_GEMM_ROW(8, q6 + 2 * l1)
      PLEXUS_TRAIN_GEMM_ROW(9, q6 + l3)
      PLEXUS_TRAIN_GEMM_ROW(10, q6 + 4 * l1)
      PLEXUS_TRAIN_GEMM_ROW(11, q6 + l3 + 2 * l1)
#undef PLEXUS_TRAIN_GEMM_ROW
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

void train_gemm_avx512(ThreadPool* pool, const GemmArgs& g) { train_gemm_detail::gemm<kMr, 32, Avx512Tile>(pool, g); }

}  // namespace plexus
