// AVX2 dot products of block-format weights with 8-bit activations (quant_dispatch_x86.h).
#include <immintrin.h>

#define PLEXUS_Q_VNNI 0
#include "kernels/cpu/quant_dispatch_x86.h"

namespace plexus {

void dot_tile_q_avx2(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                     std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  q_dispatch(wt, w, ldw, xq, ldxq, y, ldy, nt, nr, k);
}

}  // namespace plexus
