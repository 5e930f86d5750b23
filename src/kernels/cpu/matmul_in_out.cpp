// Products with (in, out) weights read in place: blocks of stored rows summed in registers
// (weighted_rows), block by block.
#include "kernels/cpu/matmul_in_out.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

namespace plexus {
namespace {

#if defined(__x86_64__)
// 8 stored weights of type t at `at` as f32.
__attribute__((target("avx2,fma,f16c"))) inline __m256 in_out_load8(DType t, const std::uint8_t* at) {
  if (t == DType::kF32) return _mm256_loadu_ps(reinterpret_cast<const float*>(at));
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
  if (t == DType::kF16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));  // bf16: the high half of an f32
}

// Decode of few tokens on an x86 table with AVX2 + FMA + F16C (avx2, avx512): for each output j
// of `width`, acc[j] = fma(x[m-1], row m-1 [j], … fma(x[0], row 0 [j], acc[j])), acc taken as zero
// when `first` — m (at most kInOutRowsAtOnce) steps of each output's FMA chain over a block
// (weighted_rows' order, so the bits of the converting path); the m rows, `row_bytes` apart, read
// contiguously and converted in registers, acc loaded and stored once per m rows.
constexpr int kInOutRowsAtOnce = 8;
__attribute__((target("avx2,fma,f16c"))) void in_out_rows_avx2(DType t, const std::uint8_t* rows, std::int64_t row_bytes,
                                                             const float* x, int m, float* acc, std::int64_t width,
                                                             bool first) {
  const std::size_t es = dtype_size(t);
  __m256 xv[kInOutRowsAtOnce];
  for (int r = 0; r < m; ++r) xv[r] = _mm256_set1_ps(x[r]);
  std::int64_t j = 0;
  for (; j + 8 <= width; j += 8) {
    __m256 a = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + j);
    const std::uint8_t* at = rows + static_cast<std::size_t>(j) * es;
    for (int r = 0; r < m; ++r) a = _mm256_fmadd_ps(xv[r], in_out_load8(t, at + r * row_bytes), a);
    _mm256_storeu_ps(acc + j, a);
  }
  for (; j < width; ++j) {
    float a = first ? 0.0f : acc[j];
    for (int r = 0; r < m; ++r) {
      const std::uint8_t* at = rows + r * row_bytes + static_cast<std::size_t>(j) * es;
      float wv = 0.0f;
      if (t == DType::kF32) std::memcpy(&wv, at, 4);
      if (t == DType::kBF16) wv = bf16_to_f32(*reinterpret_cast<const std::uint16_t*>(at));
      if (t == DType::kF16) wv = f16_to_f32(*reinterpret_cast<const std::uint16_t*>(at));
      a = std::fma(x[r], wv, a);
    }
    acc[j] = a;
  }
}
// in_out_rows_avx2 with 16 lanes, for the avx512 tables: the same chains, the same bits. (GCC 12
// warns inside its own AVX-512 headers of an uninitialised __Y there: a known false alarm.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx512bw"))) inline __m512 in_out_load16(DType t, const std::uint8_t* at) {
  if (t == DType::kF32) return _mm512_loadu_ps(at);
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
  if (t == DType::kF16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
__attribute__((target("avx512f,avx512bw"))) void in_out_rows_avx512(DType t, const std::uint8_t* rows,
                                                                  std::int64_t row_bytes, const float* x, int m,
                                                                  float* acc, std::int64_t width, bool first) {
  const std::size_t es = dtype_size(t);
  __m512 xv[kInOutRowsAtOnce];
  for (int r = 0; r < m; ++r) xv[r] = _mm512_set1_ps(x[r]);
  std::int64_t j = 0;
  for (; j + 16 <= width; j += 16) {
    __m512 a = first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + j);
    const std::uint8_t* at = rows + static_cast<std::size_t>(j) * es;
    for (int r = 0; r < m; ++r) a = _mm512_fmadd_ps(xv[r], in_out_load16(t, at + r * row_bytes), a);
    _mm512_storeu_ps(acc + j, a);
  }
  if (j < width) in_out_rows_avx2(t, rows + static_cast<std::size_t>(j) * es, row_bytes, x, m, acc + j, width - j, first);
}
#pragma GCC diagnostic pop
constexpr bool kHaveDirectKernel = true;
#else
constexpr bool kHaveDirectKernel = false;
constexpr int kInOutRowsAtOnce = 8;
void in_out_rows_avx2(DType, const std::uint8_t*, std::int64_t, const float*, int, float*, std::int64_t, bool) {}
void in_out_rows_avx512(DType, const std::uint8_t*, std::int64_t, const float*, int, float*, std::int64_t, bool) {}
#endif

}  // namespace

void matmul_in_out_columns(const IsaKernels& k, const MatmulPart& p, std::int64_t r0, std::int64_t r1, const float* x,
                           std::int64_t n, std::int64_t ldx) {
  const WeightMatrix& w = p.w;
  assert(w.in_out() && !dtype_is_block(w.dtype) && r1 <= w.rows && w.rows <= w.in_out_ld);
  const std::int64_t cols = w.cols, ld = w.in_out_ld;
  const std::size_t es = dtype_size(w.dtype);
  const auto* stored = static_cast<const std::uint8_t*>(w.data);  // (cols, ld)
  const bool f32 = w.dtype == DType::kF32;
  // Under kInOutDirectTokens tokens on the x86 tables but generic: in_out_block_avx2, the same sums.
  const bool direct = kHaveDirectKernel && n < kInOutDirectTokens && k.name != "generic";
  const bool wide = k.name.starts_with("avx512");  // the avx512 tables: 16 lanes
  thread_local std::vector<float> block;    // (kInOutDepth, kInOutWidth) f32: grows once, then reused
  thread_local std::vector<float> partial;  // (kInOutWidth): one block's sums
  if (block.size() < static_cast<std::size_t>(kInOutDepth * kInOutWidth)) {
    block.resize(static_cast<std::size_t>(kInOutDepth * kInOutWidth));
    partial.resize(static_cast<std::size_t>(kInOutWidth));
  }
  if (direct) {
    // Few tokens: each stored row's segment [r0, r1) read once per token, contiguously, into the
    // block's sums (the whole range: long runs for the prefetcher), added to y block by block.
    const std::int64_t width = r1 - r0;
    if (partial.size() < static_cast<std::size_t>(width)) partial.resize(static_cast<std::size_t>(width));
    for (std::int64_t t = 0; t < n; ++t) {
      float* yt = p.y + t * p.ldy + r0;
      const float* xt = x + t * ldx;
      for (std::int64_t c0 = 0; c0 < cols; c0 += kInOutDepth) {
        const std::int64_t dc = std::min(kInOutDepth, cols - c0);
        float* sums = c0 == 0 ? yt : partial.data();
        for (std::int64_t i = 0; i < dc; i += kInOutRowsAtOnce) {
          const int m = static_cast<int>(std::min<std::int64_t>(kInOutRowsAtOnce, dc - i));
          (wide ? in_out_rows_avx512 : in_out_rows_avx2)(w.dtype, stored + static_cast<std::size_t>((c0 + i) * ld + r0) * es,
                                                         ld * static_cast<std::int64_t>(es), xt + c0 + i, m, sums, width, i == 0);
        }
        if (c0 > 0) {
          for (std::int64_t j = 0; j < width; ++j) yt[j] += partial[static_cast<std::size_t>(j)];
        }
      }
    }
    return;
  }
  for (std::int64_t j0 = r0; j0 < r1; j0 += kInOutWidth) {
    const std::int64_t width = std::min(kInOutWidth, r1 - j0);
    for (std::int64_t c0 = 0; c0 < cols; c0 += kInOutDepth) {
      const std::int64_t dc = std::min(kInOutDepth, cols - c0);
      const float* seg = nullptr;  // (dc, width): inputs c0.., outputs j0..; rows `lds` apart
      std::int64_t lds = 0;
      if (f32) {
        seg = reinterpret_cast<const float*>(stored) + c0 * ld + j0;
        lds = ld;
      } else {
        for (std::int64_t i = 0; i < dc; ++i) {
          k.to_f32(w.dtype, stored + static_cast<std::size_t>((c0 + i) * ld + j0) * es, block.data() + i * width, width);
        }
        seg = block.data();
        lds = width;
      }
      for (std::int64_t t = 0; t < n; ++t) {
        float* yt = p.y + t * p.ldy + j0;
        if (c0 == 0) {
          k.weighted_rows(x + t * ldx, dc, seg, lds, yt, width);  // the first block's sums, in place
          continue;
        }
        k.weighted_rows(x + t * ldx + c0, dc, seg, lds, partial.data(), width);
        for (std::int64_t j = 0; j < width; ++j) yt[j] += partial[static_cast<std::size_t>(j)];
      }
    }
  }
}

}  // namespace plexus
