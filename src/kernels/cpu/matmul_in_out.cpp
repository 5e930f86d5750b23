// Products with (in, out) weights read in place: row-axpy over the stored rows, blocked for prefill.
#include "kernels/cpu/matmul_in_out.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace plexus {

void matmul_in_out_columns(const IsaKernels& k, const MatmulPart& p, std::int64_t r0, std::int64_t r1, const float* x,
                           std::int64_t n, std::int64_t ldx) {
  const WeightMatrix& w = p.w;
  assert(w.in_out() && !dtype_is_block(w.dtype) && r1 <= w.rows && w.rows <= w.in_out_ld);
  const std::int64_t cols = w.cols, ld = w.in_out_ld;
  const std::size_t es = dtype_size(w.dtype);
  const auto* stored = static_cast<const std::uint8_t*>(w.data);  // (cols, ld)
  const bool f32 = w.dtype == DType::kF32;
  const std::int64_t depth = n < kInOutStreamTokens ? 1 : kInOutDepth;
  thread_local std::vector<float> block;  // (depth, width) f32; grows once, then reused
  if (!f32 && block.size() < static_cast<std::size_t>(depth * kInOutWidth)) {
    block.resize(static_cast<std::size_t>(depth * kInOutWidth));
  }
  for (std::int64_t j0 = r0; j0 < r1; j0 += kInOutWidth) {
    const std::int64_t width = std::min(kInOutWidth, r1 - j0);
    if (f32 && n < kInOutStreamTokens) {  // decode: the rows stream past accumulators in registers
      const float* panel = reinterpret_cast<const float*>(stored) + j0;
      for (std::int64_t t = 0; t < n; ++t) k.weighted_rows(x + t * ldx, cols, panel, ld, p.y + t * p.ldy + j0, width);
      continue;
    }
    for (std::int64_t t = 0; t < n; ++t) std::fill_n(p.y + t * p.ldy + j0, width, 0.0f);
    for (std::int64_t c0 = 0; c0 < cols; c0 += depth) {
      const std::int64_t dc = std::min(depth, cols - c0);
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
        const float* xt = x + t * ldx + c0;
        float* yt = p.y + t * p.ldy + j0;
        for (std::int64_t i = 0; i < dc; ++i) k.axpy(xt[i], seg + i * lds, yt, width);
      }
    }
  }
}

}  // namespace plexus
