// The driver of train_gemm's bf16 products (GemmArgs::bf16), included by the files of its
// register tiles: train_gemm_generic.cpp (the plain emulation) and train_gemm_avx512bf16.cpp
// (vdpbf16ps). A and B are rounded to bf16 (f32_to_bf16_ftz) as they are packed, in k pairs: A
// into panels (k/2, MR, 2), B into panels (k/2, NR, 2); each tile runs its k range in blocks of
// kKc, as the f32 driver does. The order of the sums is fixed (kernels/ref/gemm_bf16_ref is it,
// plainly), so every tile gives the same bits: per element of C and per block of kKc k's from
// zero, for each pair (p, p + 1) (a block of odd length pads a zero pair): acc = fma(A(i, p + 1),
// B(p + 1, j), acc), then acc = fma(A(i, p), B(p, j), acc), each f32 result that is subnormal
// flushed to ±0 — what vdpbf16ps does in each lane — then C = acc (the first block, no
// accumulate) or C + acc.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/train_gemm.h"

namespace plexus::train_gemm_bf16_detail {
namespace {

constexpr std::int64_t kKc = 256;       // k per register-tile pass (even)
constexpr std::int64_t kKChunk = 1024;  // k per packing pass (a multiple of kKc)
constexpr std::int64_t kMChunk = 1536;  // rows of A per packing pass
constexpr std::int64_t kNChunk = 2048;  // columns of B per packing pass

inline std::vector<std::uint16_t>& scratch(int which) {
  thread_local std::vector<std::uint16_t> s[2];
  return s[which];
}

// n values of `v` starting on a 64-byte line.
inline std::uint16_t* grow(std::vector<std::uint16_t>& v, std::int64_t n) {
  if (static_cast<std::int64_t>(v.size()) < n + 32) v.resize(static_cast<std::size_t>(n + 32));
  const auto address = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + ((64 - address % 64) % 64) / sizeof(std::uint16_t);
}

// dst (pairs, W, 2) = element (L, p) = src[L·line_stride + p·k_stride] in bf16 for lines L < W
// and p < 2·pairs, zeros at and past `lines` and `kc`: a panel of A (lines: rows) or B (lines:
// columns). The tiles' default packing (plain loops); a tile may bring a faster one, bitwise equal.
inline void pack_scalar(const float* src, std::int64_t line_stride, std::int64_t k_stride, std::int64_t lines,
                        std::int64_t W, std::int64_t kc, std::uint16_t* dst) {
  const std::int64_t pairs = (kc + 1) / 2;
  for (std::int64_t L = 0; L < W; ++L) {
    std::uint16_t* d = dst + L * 2;
    if (L >= lines) {
      for (std::int64_t p = 0; p < 2 * pairs; ++p) d[(p / 2) * W * 2 + p % 2] = 0;
      continue;
    }
    const float* line = src + L * line_stride;
    for (std::int64_t p = 0; p < 2 * pairs; ++p) d[(p / 2) * W * 2 + p % 2] = p < kc ? f32_to_bf16_ftz(line[p * k_stride]) : 0;
  }
}

struct ScalarPack {
  static void pack(const float* src, std::int64_t line_stride, std::int64_t k_stride, std::int64_t lines,
                   std::int64_t W, std::int64_t kc, std::uint16_t* dst) {
    pack_scalar(src, line_stride, k_stride, lines, W, kc, dst);
  }
};

// A panel: rows [i0, i0 + MR) × k [k0, k0 + kc). B panel: columns [j0, j0 + NR) × the same k.
template <int MR, class Tile>
void pack_a(const GemmArgs& g, std::int64_t i0, std::int64_t k0, std::int64_t kc, std::uint16_t* dst) {
  Tile::pack(g.a + i0 * g.a_rs + k0 * g.a_cs, g.a_rs, g.a_cs, std::min<std::int64_t>(MR, g.m - i0), MR, kc, dst);
}
template <int NR, class Tile>
void pack_b(const GemmArgs& g, std::int64_t j0, std::int64_t k0, std::int64_t kc, std::uint16_t* dst) {
  Tile::pack(g.b + j0 * g.b_cs + k0 * g.b_rs, g.b_cs, g.b_rs, std::min<std::int64_t>(NR, g.n - j0), NR, kc, dst);
}

// Tile: static void tile(std::int64_t pairs, const std::uint16_t* ap, const std::uint16_t* bp,
// float* c, std::int64_t ldc, bool add) — C (MR, NR) = or += the packed A (pairs, MR, 2) times
// the packed B (pairs, NR, 2), in the order above; and static void pack(...) as pack_scalar.
template <class F>
void run_chunks(ThreadPool* pool, std::int64_t n, F& fn) {
  if (pool) {
    pool->run_chunks(n, fn);
  } else {
    for (std::int64_t i = 0; i < n; ++i) fn(i, 0);
  }
}

template <int MR, int NR, class Tile>
void gemm(ThreadPool* pool, const GemmArgs& g) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) {
    if (!g.accumulate)
      for (std::int64_t i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, 0.0f);
    return;
  }
  constexpr std::int64_t kMu = 4 * MR, kNu = 4 * NR;  // a thread's tile of C
  for (std::int64_t m0 = 0; m0 < g.m; m0 += kMChunk) {
    const std::int64_t mc = std::min(kMChunk, g.m - m0);
    const std::int64_t a_panels = (mc + MR - 1) / MR;
    for (std::int64_t k0 = 0; k0 < g.k; k0 += kKChunk) {
      const std::int64_t kc = std::min(kKChunk, g.k - k0), kp = (kc + 1) / 2 * 2;
      std::uint16_t* pa = grow(scratch(0), a_panels * MR * kp);
      auto pack_as = [&](std::int64_t i, int) { pack_a<MR, Tile>(g, m0 + i * MR, k0, kc, pa + i * MR * kp); };
      run_chunks(pool, a_panels, pack_as);
      const bool add = g.accumulate || k0 > 0;
      for (std::int64_t n0 = 0; n0 < g.n; n0 += kNChunk) {
        const std::int64_t nc = std::min(kNChunk, g.n - n0);
        const std::int64_t b_panels = (nc + NR - 1) / NR;
        std::uint16_t* pb = grow(scratch(1), b_panels * NR * kp);
        auto pack_bs = [&](std::int64_t j, int) { pack_b<NR, Tile>(g, n0 + j * NR, k0, kc, pb + j * NR * kp); };
        run_chunks(pool, b_panels, pack_bs);
        const std::int64_t tiles_m = (mc + kMu - 1) / kMu, tiles_n = (nc + kNu - 1) / kNu;
        auto run_tile = [&](std::int64_t t, int) {
          const std::int64_t ti = t % tiles_m, tj = t / tiles_m;
          const std::int64_t ie = std::min(mc, (ti + 1) * kMu), je = std::min(nc, (tj + 1) * kNu);
          alignas(64) float part[MR * NR];
          for (std::int64_t p0 = 0; p0 < kp; p0 += kKc) {
            const std::int64_t pairs = std::min(kKc, kp - p0) / 2;
            const bool add_block = add || p0 > 0;
            for (std::int64_t i = ti * kMu; i < ie; i += MR) {
              const std::int64_t rows = std::min<std::int64_t>(MR, ie - i);
              const std::uint16_t* ap = pa + (i / MR) * MR * kp + p0 * MR;
              for (std::int64_t j = tj * kNu; j < je; j += NR) {
                const std::uint16_t* bp = pb + (j / NR) * NR * kp + p0 * NR;
                const std::int64_t cols = std::min<std::int64_t>(NR, je - j);
                float* c = g.c + (m0 + i) * g.ldc + n0 + j;
                const bool full = rows == MR && cols == NR;  // else through `part`
                Tile::tile(pairs, ap, bp, full ? c : part, full ? g.ldc : NR, full && add_block);
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
}  // namespace plexus::train_gemm_bf16_detail
