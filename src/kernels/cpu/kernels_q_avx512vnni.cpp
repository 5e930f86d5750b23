// AVX-512 VNNI dot products of block-format weights with 8-bit activations (quant_dispatch_x86.h:
// 256-bit dpbusd / dpwssd, AVX512_VNNI + AVX512VL). Only called after a CPUID check.
#include "kernels/cpu/avx512_intrinsics.h"

#define PLEXUS_Q_VNNI 1
#include "kernels/cpu/quant_dispatch_x86.h"

namespace plexus {

void dot_tile_q_avx512vnni(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                           std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  q_dispatch(wt, w, ldw, xq, ldxq, y, ldy, nt, nr, k);
}

}  // namespace plexus
