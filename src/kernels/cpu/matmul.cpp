// Splits all output rows of all parts evenly across the pool's threads.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/quantize.h"

namespace plexus {
namespace {

// Fewer tokens than this are one token tile in every table: the rows are read once, no blocks.
constexpr std::int64_t kOneTileTokens = 4;

// Rows per converted block: about 96 KiB of f32, a multiple of the register tile height.
std::int64_t block_rows(std::int64_t cols, std::int64_t tile) {
  std::int64_t r = 98304 / (cols * 4);
  r = std::clamp<std::int64_t>(r, tile, std::max<std::int64_t>(96, tile));
  return r - r % tile;
}

// xb: x rounded to bf16 (n, cols) when the table multiplies bf16 weights in place (else null).
void run_rows(const IsaKernels& k, const MatmulPart& p, std::int64_t r0, std::int64_t r1, const float* x,
              std::int64_t n, std::int64_t ldx, const std::uint16_t* xb) {
  const std::int64_t cols = p.w.cols;
  if (dtype_is_block(p.w.dtype)) {
    // Interim: quantised rows dequantised to f32 a block at a time, then multiplied as f32.
    thread_local std::vector<float> rows;
    const std::int64_t step = block_rows(cols, k.tile_rows);
    if (rows.size() < static_cast<std::size_t>(step * cols)) rows.resize(static_cast<std::size_t>(step * cols));
    for (std::int64_t r = r0; r < r1; r += step) {
      const std::int64_t nr = std::min(step, r1 - r);
      dequantize_row(p.w.dtype, p.w.row(r), rows.data(), nr * cols);
      k.dot_tile(DType::kF32, rows.data(), cols, x, ldx, p.y + r, p.ldy, n, nr, cols);
    }
    return;
  }
  if (xb != nullptr && p.w.dtype == DType::kBF16) {
    const std::int64_t step = block_rows(cols, k.tile_rows);
    for (std::int64_t r = r0; r < r1; r += step) {
      k.dot_tile_bf16(static_cast<const std::uint16_t*>(p.w.row(r)), cols, xb, cols, p.y + r, p.ldy, n,
                      std::min(step, r1 - r), cols);
    }
    return;
  }
  if (n <= k.stream_max_tokens || p.w.dtype == DType::kF32) {
    // Weights straight from memory. Few tokens (decode, batched decode) stream them once, and
    // the tiles prefetch ahead; converting them to f32 first would write and read back twice the
    // bytes. With several token tiles per row block (f32, or more tokens than one tile holds) the
    // block is read again from cache, so block rows for locality.
    const std::int64_t step = n < kOneTileTokens ? r1 - r0 : block_rows(cols, k.tile_rows);
    for (std::int64_t r = r0; r < r1; r += step) {
      const std::int64_t nr = std::min(step, r1 - r);
      k.dot_tile(p.w.dtype, p.w.row(r), cols, x, ldx, p.y + r, p.ldy, n, nr, cols);
    }
    return;
  }
  // Many tokens (prefill): convert a block of rows to f32 once and reuse it across all tokens.
  thread_local std::vector<float> block;  // grows once to its largest size, then reused
  const std::int64_t step = block_rows(cols, k.tile_rows);
  if (block.size() < static_cast<std::size_t>(step * cols)) block.resize(static_cast<std::size_t>(step * cols));
  for (std::int64_t r = r0; r < r1; r += step) {
    const std::int64_t nr = std::min(step, r1 - r);
    k.to_f32(p.w.dtype, p.w.row(r), block.data(), nr * cols);
    k.dot_tile(DType::kF32, block.data(), cols, x, ldx, p.y + r, p.ldy, n, nr, cols);
  }
}

// x (n, ldx) rounded to bf16 (n, cols) once per launch, in a buffer of the calling thread, when
// the table multiplies bf16 weights with this many tokens in place; else null.
const std::uint16_t* round_x_bf16(const IsaKernels& k, ThreadPool& pool, bool any_bf16, const float* x,
                                  std::int64_t n, std::int64_t ldx, std::int64_t cols) {
  if (!k.prefill_bf16_in_place || !any_bf16 || n < kOneTileTokens) return nullptr;
  thread_local std::vector<std::uint16_t> xb;  // grows once to its largest size, then reused
  if (xb.size() < static_cast<std::size_t>(n * cols)) xb.resize(static_cast<std::size_t>(n * cols));
  std::uint16_t* out = xb.data();  // the workers name their own thread_local xb, so not that
  pool.parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) { k.round_bf16(x + b * ldx, ldx, e - b, cols, out + b * cols); });
  return out;
}

}  // namespace

void matmul(const IsaKernels& k, ThreadPool& pool, std::span<const MatmulPart> parts, const float* x,
            std::int64_t n, std::int64_t ldx) {
  if (parts.empty() || n <= 0) return;
  std::int64_t total = 0;
  for (const MatmulPart& p : parts) {
    assert(p.w.cols == parts[0].w.cols && ldx >= p.w.cols);
    total += p.w.rows;
  }
  const bool any_bf16 = std::any_of(parts.begin(), parts.end(), [](const MatmulPart& p) { return p.w.dtype == DType::kBF16; });
  const std::uint16_t* xb = round_x_bf16(k, pool, any_bf16, x, n, ldx, parts[0].w.cols);
  pool.parallel_for(total, 16, [&](std::int64_t b, std::int64_t e) {
    std::int64_t base = 0;
    for (const MatmulPart& p : parts) {
      const std::int64_t lo = std::max(b, base), hi = std::min(e, base + p.w.rows);
      if (lo < hi) run_rows(k, p, lo - base, hi - base, x, n, ldx, xb);
      base += p.w.rows;
    }
  });
}

void matmul_silu_mul(const IsaKernels& k, ThreadPool& pool, const MatmulPart& gate, const MatmulPart& up,
                     const float* x, std::int64_t n, std::int64_t ldx) {
  if (n <= 0) return;
  assert(gate.w.rows == up.w.rows && gate.w.cols == up.w.cols && ldx >= gate.w.cols);
  const bool any_bf16 = gate.w.dtype == DType::kBF16 || up.w.dtype == DType::kBF16;
  const std::uint16_t* xb = round_x_bf16(k, pool, any_bf16, x, n, ldx, gate.w.cols);
  pool.parallel_for(gate.w.rows, 16, [&](std::int64_t b, std::int64_t e) {
    run_rows(k, gate, b, e, x, n, ldx, xb);
    run_rows(k, up, b, e, x, n, ldx, xb);
    for (std::int64_t t = 0; t < n; ++t) {
      float* g = gate.y + t * gate.ldy + b;
      k.silu_mul(g, up.y + t * up.ldy + b, g, e - b);
    }
  });
}

}  // namespace plexus
