// Splits all output rows of all parts evenly across the pool's threads.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/cpu/matmul_in_out.h"
#include "kernels/cpu/quant_x.h"

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

// Rows per block of block-format weights when several token tiles reuse them: about 48 KiB, a
// multiple of 12 (the tiles' rows: 4, and 3 or 2 in prefill's wide tiles).
std::int64_t q_block_rows(std::int64_t row_bytes) {
  const std::int64_t r = std::clamp<std::int64_t>(49152 / row_bytes, 12, 96);
  return r - r % 12;
}

// x quantised to 8 bits once per launch for block-format weights (kernels/cpu/quant_x.h): one
// buffer per x block size the launch's weights need (32 or 256: the formats' own block).
struct QuantizedX {
  const std::uint8_t* x32 = nullptr;
  const std::uint8_t* x256 = nullptr;
  std::int64_t ld32 = 0, ld256 = 0;  // bytes per token
};

// xb: x rounded to bf16 (n, cols) when the table multiplies bf16 weights in place (else null).
void run_rows(const IsaKernels& k, const MatmulPart& p, std::int64_t r0, std::int64_t r1, const float* x,
              std::int64_t n, std::int64_t ldx, const std::uint16_t* xb, const QuantizedX& xq) {
  if (p.w.in_out()) {  // stored (in, out): GPT-2's Conv1D weights in place
    matmul_in_out_columns(k, p, r0, r1, x, n, ldx);
    return;
  }
  const std::int64_t cols = p.w.cols;
  if (dtype_is_block(p.w.dtype)) {
    // Integer dot products against the quantised x. Up to one token tile (decode, batched decode
    // of a few) streams the rows once; more tokens go a cache-sized block of rows at a time, each
    // block read from memory once and reused by every token tile.
    const bool b32 = qx_block_elems(p.w.dtype) == 32;
    const std::uint8_t* xr = b32 ? xq.x32 : xq.x256;
    const std::int64_t ldq = b32 ? xq.ld32 : xq.ld256;
    const std::int64_t step = n < kOneTileTokens + 1 ? r1 - r0 : q_block_rows(p.w.row_bytes());
    for (std::int64_t r = r0; r < r1; r += step) {
      k.dot_tile_q(p.w.dtype, p.w.row(r), p.w.row_bytes(), xr, ldq, p.y + r, p.ldy, n, std::min(step, r1 - r), cols);
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

// The buffers one launch's x is prepared in (grown once to their largest size, then reused).
struct XBuffers {
  std::vector<std::uint16_t> bf16;
  std::vector<std::uint8_t> q32, q256;
};

// Rows [b, e) of gate and up, then silu(gate)·up over them into gate.y (matmul_silu_mul's chunk).
void silu_rows(const IsaKernels& k, const MatmulPart& gate, const MatmulPart& up, std::int64_t b, std::int64_t e,
               const float* x, std::int64_t n, std::int64_t ldx, const std::uint16_t* xb, const QuantizedX& xq) {
  run_rows(k, gate, b, e, x, n, ldx, xb, xq);
  run_rows(k, up, b, e, x, n, ldx, xb, xq);
  for (std::int64_t t = 0; t < n; ++t) {
    float* g = gate.y + t * gate.ldy + b;
    k.silu_mul(g, up.y + t * up.ldy + b, g, e - b);
  }
}

// x (n, ldx) rounded to bf16 (n, cols) once per launch, in `buffers`, when the table multiplies
// bf16 weights with this many tokens in place; else null.
const std::uint16_t* round_x_bf16(const IsaKernels& k, ThreadPool& pool, bool any_bf16, const float* x,
                                  std::int64_t n, std::int64_t ldx, std::int64_t cols, XBuffers& buffers) {
  if (!k.prefill_bf16_in_place || !any_bf16 || n < kOneTileTokens) return nullptr;
  std::vector<std::uint16_t>& xb = buffers.bf16;
  if (xb.size() < static_cast<std::size_t>(n * cols)) xb.resize(static_cast<std::size_t>(n * cols));
  std::uint16_t* out = xb.data();
  pool.parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) { k.round_bf16(x + b * ldx, ldx, e - b, cols, out + b * cols); });
  return out;
}

// x (n, ldx) quantised for the block-format parts, in `buffers`.
QuantizedX quantize_x_for(ThreadPool& pool, std::span<const MatmulPart> parts, const float* x, std::int64_t n,
                          std::int64_t ldx, XBuffers& buffers) {
  std::vector<std::uint8_t>& buf32 = buffers.q32;
  std::vector<std::uint8_t>& buf256 = buffers.q256;
  QuantizedX q;
  const std::int64_t cols = parts[0].w.cols;
  for (const MatmulPart& p : parts) {
    if (!dtype_is_block(p.w.dtype)) continue;
    const bool b32 = qx_block_elems(p.w.dtype) == 32;
    if ((b32 ? q.x32 : q.x256) != nullptr) continue;
    std::vector<std::uint8_t>& buf = b32 ? buf32 : buf256;
    const std::int64_t ld = qx_row_bytes(p.w.dtype, cols);
    if (buf.size() < static_cast<std::size_t>(n * ld)) buf.resize(static_cast<std::size_t>(n * ld));
    std::uint8_t* out = buf.data();
    const DType wt = p.w.dtype;
    pool.parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) { quantize_x(wt, x + b * ldx, ldx, e - b, cols, out + b * ld); });
    (b32 ? q.x32 : q.x256) = out;
    (b32 ? q.ld32 : q.ld256) = ld;
  }
  return q;
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
  thread_local XBuffers buffers;  // the calling thread's (workers only read them)
  const std::uint16_t* xb = round_x_bf16(k, pool, any_bf16, x, n, ldx, parts[0].w.cols, buffers);
  const QuantizedX xq = quantize_x_for(pool, parts, x, n, ldx, buffers);
  pool.parallel_for(total, 16, [&](std::int64_t b, std::int64_t e) {
    std::int64_t base = 0;
    for (const MatmulPart& p : parts) {
      const std::int64_t lo = std::max(b, base), hi = std::min(e, base + p.w.rows);
      if (lo < hi) run_rows(k, p, lo - base, hi - base, x, n, ldx, xb, xq);
      base += p.w.rows;
    }
  });
}

void matmul_silu_mul(const IsaKernels& k, ThreadPool& pool, const MatmulPart& gate, const MatmulPart& up,
                     const float* x, std::int64_t n, std::int64_t ldx) {
  if (n <= 0) return;
  assert(gate.w.rows == up.w.rows && gate.w.cols == up.w.cols && ldx >= gate.w.cols);
  const bool any_bf16 = gate.w.dtype == DType::kBF16 || up.w.dtype == DType::kBF16;
  thread_local XBuffers buffers;
  const std::uint16_t* xb = round_x_bf16(k, pool, any_bf16, x, n, ldx, gate.w.cols, buffers);
  const MatmulPart both[2] = {gate, up};
  const QuantizedX xq = quantize_x_for(pool, both, x, n, ldx, buffers);
  pool.parallel_for(gate.w.rows, 16, [&](std::int64_t b, std::int64_t e) { silu_rows(k, gate, up, b, e, x, n, ldx, xb, xq); });
}

void matmul_groups(const IsaKernels& k, ThreadPool& pool, std::span<const MatmulGroup> groups) {
  if (groups.empty()) return;
  // Each group's x prepared in its own buffers, then every group's rows in one launch.
  struct Prepared {
    const std::uint16_t* xb = nullptr;
    QuantizedX xq;
  };
  thread_local std::vector<XBuffers> buffers;
  if (buffers.size() < groups.size()) buffers.resize(groups.size());
  std::vector<Prepared> prep(groups.size());
  std::vector<std::int64_t> first(groups.size() + 1, 0);  // each group's first row in the launch
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const MatmulGroup& g = groups[i];
    const bool gated = g.up.w.data != nullptr;
    assert(!gated || (g.gate.w.rows == g.up.w.rows && g.gate.w.cols == g.up.w.cols));
    const bool any_bf16 = g.gate.w.dtype == DType::kBF16 || (gated && g.up.w.dtype == DType::kBF16);
    prep[i].xb = round_x_bf16(k, pool, any_bf16, g.x, g.n, g.ldx, g.gate.w.cols, buffers[i]);
    const MatmulPart both[2] = {g.gate, g.up};
    prep[i].xq = quantize_x_for(pool, std::span(both, gated ? 2 : 1), g.x, g.n, g.ldx, buffers[i]);
    first[i + 1] = first[i] + (g.n > 0 ? g.gate.w.rows : 0);
  }
  pool.parallel_for(first.back(), 16, [&](std::int64_t b, std::int64_t e) {
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const std::int64_t lo = std::max(b, first[i]), hi = std::min(e, first[i + 1]);
      if (lo >= hi) continue;
      const MatmulGroup& g = groups[i];
      if (g.up.w.data != nullptr) silu_rows(k, g.gate, g.up, lo - first[i], hi - first[i], g.x, g.n, g.ldx, prep[i].xb, prep[i].xq);
      else run_rows(k, g.gate, lo - first[i], hi - first[i], g.x, g.n, g.ldx, prep[i].xb, prep[i].xq);
    }
  });
}

}  // namespace plexus
