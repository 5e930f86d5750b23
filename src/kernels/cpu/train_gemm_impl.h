// The driver of train_gemm, included by each train_gemm_<isa>.cpp with its register-tile kernel
// (so the packing loops are compiled for that ISA too). The classic scheme: A is packed into
// panels of MR rows (MR values per k), B into panels of NR columns (NR values per k), both for a
// chunk of k at a time; threads take (MU × NU) tiles of C; a tile runs its k range in blocks of
// kKc, an MR×NR register tile per block, added to C after each block. Each element of C thus
// sees the same sequence of additions whoever computes it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/train_gemm.h"

// Internal linkage (an unnamed namespace): each ISA's file compiles its own copy with its own flags.
namespace plexus::train_gemm_detail {
namespace {

constexpr std::int64_t kKc = 256;       // k per register-tile pass (A micro-panel MR·kKc stays in L1)
constexpr std::int64_t kKChunk = 1024;  // k per packing pass
constexpr std::int64_t kMChunk = 1536;  // rows of A per packing pass
constexpr std::int64_t kNChunk = 2048;  // columns of B per packing pass

struct Scratch {
  std::vector<float> a, b;
};

inline Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// n floats of `v` starting on a 64-byte line (packed panels are read and written in whole
// lines: a vector load that straddles two lines costs twice).
inline float* grow(std::vector<float>& v, std::int64_t n) {
  if (static_cast<std::int64_t>(v.size()) < n + 16) v.resize(static_cast<std::size_t>(n + 16));
  const auto address = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + ((64 - address % 64) % 64) / sizeof(float);
}

// dst[p * ld_dst + r] = src[r * ld_src + p] for r < rows, p < kc (the kernels' default transpose).
inline void transpose_scalar(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t kc, float* dst,
                             std::int64_t ld_dst) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t p = 0; p < kc; ++p) dst[p * ld_dst + r] = src[r * ld_src + p];
}

// The transpose of a Kernel (below) that has no faster one of its own: inherit it.
struct ScalarTranspose {
  static void transpose(const float* src, std::int64_t ld_src, std::int64_t rows, std::int64_t kc, float* dst,
                        std::int64_t ld_dst) {
    transpose_scalar(src, ld_src, rows, kc, dst, ld_dst);
  }
};

// dst (kc, MR) = A rows [i0, i0 + MR) × k [k0, k0 + kc), zero rows past m.
template <int MR, class Kernel>
void pack_a(const GemmArgs& g, std::int64_t i0, std::int64_t k0, std::int64_t kc, float* dst) {
  const std::int64_t rows = std::min<std::int64_t>(MR, g.m - i0);
  if (g.a_cs == 1) {
    Kernel::transpose(g.a + i0 * g.a_rs + k0, g.a_rs, rows, kc, dst, MR);
  } else if (rows == MR) {  // a_rs == 1: MR values of one k side by side already
    for (std::int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * MR, g.a + (k0 + p) * g.a_cs + i0, sizeof(float) * MR);
  } else {
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* src = g.a + (k0 + p) * g.a_cs + i0;
      for (std::int64_t r = 0; r < rows; ++r) dst[p * MR + r] = src[r];
    }
  }
  for (std::int64_t r = rows; r < MR; ++r)
    for (std::int64_t p = 0; p < kc; ++p) dst[p * MR + r] = 0;
}

// dst (kc, NR) = B k [k0, k0 + kc) × columns [j0, j0 + NR), zero columns past n.
template <int NR, class Kernel>
void pack_b(const GemmArgs& g, std::int64_t j0, std::int64_t k0, std::int64_t kc, float* dst) {
  const std::int64_t cols = std::min<std::int64_t>(NR, g.n - j0);
  if (g.b_cs == 1) {
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* src = g.b + (k0 + p) * g.b_rs + j0;
      float* d = dst + p * NR;
      if (cols == NR) {
        std::memcpy(d, src, sizeof(float) * NR);
      } else {
        for (std::int64_t c = 0; c < cols; ++c) d[c] = src[c];
        for (std::int64_t c = cols; c < NR; ++c) d[c] = 0;
      }
    }
  } else {  // b_rs == 1: column j of B is a row of the source
    Kernel::transpose(g.b + j0 * g.b_cs + k0, g.b_cs, cols, kc, dst, NR);
    for (std::int64_t p = 0; p < kc; ++p)
      for (std::int64_t c = cols; c < NR; ++c) dst[p * NR + c] = 0;
  }
}

// Kernel: template <bool kRows> static void tile(std::int64_t kc, const float* a, std::int64_t lda,
// const float* bp, float* c, std::int64_t ldc, bool add) — C (MR, NR) = or += A (MR, kc) · bp
// (kc, NR), summed in k order from zero, then added to C (add) in one step; A (r, p) is a[r * lda
// + p] (kRows) or a[p * MR + r] (packed); and static void transpose(...) as
// transpose_scalar (the packing of row-major operands).
// fn(chunk, thread) for every chunk in [0, n): on the pool, or in order on this thread (pool null).
template <class F>
void run_chunks(ThreadPool* pool, std::int64_t n, F& fn) {
  if (pool) {
    pool->run_chunks(n, fn);
  } else {
    for (std::int64_t i = 0; i < n; ++i) fn(i, 0);
  }
}

template <int MR, int NR, class Kernel>
void gemm(ThreadPool* pool, const GemmArgs& g) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) {
    if (!g.accumulate)
      for (std::int64_t i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, 0.0f);
    return;
  }
  constexpr std::int64_t kMu = 4 * MR, kNu = 4 * NR;  // a thread's tile of C
  Scratch& s = scratch();
  for (std::int64_t m0 = 0; m0 < g.m; m0 += kMChunk) {
    const std::int64_t mc = std::min(kMChunk, g.m - m0);
    const std::int64_t a_panels = (mc + MR - 1) / MR;
    for (std::int64_t k0 = 0; k0 < g.k; k0 += kKChunk) {
      const std::int64_t kc = std::min(kKChunk, g.k - k0);
      // Row-major A (y = x·wᵀ, dx = dy·w) is read in place, MR rows at a time; A with its k
      // rows apart (dw = dyᵀ·x) is packed into panels.
      const bool a_rows = g.a_cs == 1;
      float* pa = nullptr;
      if (!a_rows) {
        pa = grow(s.a, a_panels * MR * kc);
        auto pack_as = [&](std::int64_t i, int) { pack_a<MR, Kernel>(g, m0 + i * MR, k0, kc, pa + i * MR * kc); };
        run_chunks(pool, a_panels, pack_as);
      }
      const bool add = g.accumulate || k0 > 0;
      for (std::int64_t n0 = 0; n0 < g.n; n0 += kNChunk) {
        const std::int64_t nc = std::min(kNChunk, g.n - n0);
        const std::int64_t b_panels = (nc + NR - 1) / NR;
        float* pb = grow(s.b, b_panels * NR * kc);
        auto pack_bs = [&](std::int64_t j, int) { pack_b<NR, Kernel>(g, n0 + j * NR, k0, kc, pb + j * NR * kc); };
        run_chunks(pool, b_panels, pack_bs);
        const std::int64_t tiles_m = (mc + kMu - 1) / kMu, tiles_n = (nc + kNu - 1) / kNu;
        auto run_tile = [&](std::int64_t t, int) {
          const std::int64_t ti = t % tiles_m, tj = t / tiles_m;
          const std::int64_t ie = std::min(mc, (ti + 1) * kMu), je = std::min(nc, (tj + 1) * kNu);
          alignas(64) float part[MR * NR];
          alignas(64) float edge[MR * kKc];  // a last, partial panel of row-major A, zero-padded
          for (std::int64_t p0 = 0; p0 < kc; p0 += kKc) {
            const std::int64_t pk = std::min(kKc, kc - p0);
            const bool add_block = add || p0 > 0;
            for (std::int64_t i = ti * kMu; i < ie; i += MR) {
              const std::int64_t rows = std::min<std::int64_t>(MR, ie - i);
              const float* ap = nullptr;
              std::int64_t lda = 0;
              if (!a_rows) {
                ap = pa + (i / MR) * MR * kc + p0 * MR;
              } else if (rows == MR) {
                ap = g.a + (m0 + i) * g.a_rs + k0 + p0, lda = g.a_rs;
              } else {
                for (std::int64_t r = 0; r < MR; ++r)
                  for (std::int64_t p = 0; p < pk; ++p)
                    edge[r * kKc + p] = r < rows ? g.a[(m0 + i + r) * g.a_rs + k0 + p0 + p] : 0.0f;
                ap = edge, lda = kKc;
              }
              for (std::int64_t j = tj * kNu; j < je; j += NR) {
                const float* bp = pb + (j / NR) * NR * kc + p0 * NR;
                const std::int64_t cols = std::min<std::int64_t>(NR, je - j);
                float* c = g.c + (m0 + i) * g.ldc + n0 + j;
                const bool full = rows == MR && cols == NR;  // else through `part`
                float* dst = full ? c : part;
                const std::int64_t ldd = full ? g.ldc : NR;
                if (a_rows)
                  Kernel::template tile<true>(pk, ap, lda, bp, dst, ldd, full && add_block);
                else
                  Kernel::template tile<false>(pk, ap, 0, bp, dst, ldd, full && add_block);
                if (!full)
                  for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t q = 0; q < cols; ++q)
                      c[r * g.ldc + q] = add_block ? c[r * g.ldc + q] + part[r * NR + q] : part[r * NR + q];
              }
            }
          }
        };
        run_chunks(pool, tiles_m * tiles_n, run_tile);
      }
    }
  }
}

}  // namespace
}  // namespace plexus::train_gemm_detail
