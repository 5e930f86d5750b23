// q_dispatch: the register tiles of each block format's x86 kernel (quant_blocks_x86.h, and the
// 512-bit decode kernels of quant_blocks512_x86.h in the VNNI build), included by the AVX2 file
// and the AVX-512 VNNI file. Define PLEXUS_Q_VNNI (0 or 1) and include <immintrin.h> first.
#pragma once
#include <cstdlib>
#include <type_traits>

#include "kernels/cpu/quant_blocks_x86.h"
#if PLEXUS_Q_VNNI
#include "kernels/cpu/quant_blocks512_x86.h"
#endif

namespace plexus {
namespace {

#if PLEXUS_Q_VNNI
// The 512-bit decode kernels; PLEXUS_Q_NARROW_DECODE=1 selects the 256-bit ones instead (for
// before/after measurements only: both give the same bits).
inline bool q_wide_decode() {
  static const bool wide = [] {
    const char* e = std::getenv("PLEXUS_Q_NARROW_DECODE");
    return !(e != nullptr && e[0] == '1');
  }();
  return wide;
}
#endif

// The 512-bit decode kernel T in the VNNI build; none (void) in the AVX2 build.
#if PLEXUS_Q_VNNI
#define PLEXUS_Q_WIDE(T) T
#else
#define PLEXUS_Q_WIDE(T) void
#endif

// Rows of prefill's wide tiles (quant_tile.h: 4 tokens × this many rows): 4 · 3 integer and 4 · 3
// f32 sums fit the 32 vector registers of AVX-512, 4 · 2 the 16 of AVX2.
constexpr int kWideRows = PLEXUS_Q_VNNI ? 3 : 2;

// Format F's tiles: kNT = 4 tokens × kNR rows (4 rows for one token), or for one token the
// 512-bit kernel F512 (void: none) whose blocks are kPer of F's, when the row has whole ones.
template <class F, int kNR, class F512, int kPer = 1>
void q_run(const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y, std::int64_t ldy,
           std::int64_t nt, std::int64_t nr, std::int64_t nb) {
#if PLEXUS_Q_VNNI
  if constexpr (!std::is_void_v<F512>) {
    if (nt == 1 && nb % kPer == 0 && q_wide_decode()) {
      return q_tile_rows<F512, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq,
                                           y, ldy, nr, nb / kPer);
    }
  }
#endif
  q_dot_tile<F, 4, kNR, 4, kWideRows>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
}

// dot_tile_q for one table: the register tiles per format.
void q_dispatch(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  const std::int64_t nb = k / dtype_block_elems(wt);
  switch (wt) {
    case DType::kQ8_0: return q_run<Q8_0K, 3, void>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ4_0: return q_run<Q4_0K, 3, PLEXUS_Q_WIDE(Pair32K512<Q4_0V>), 2>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ4_1: return q_run<Q4_1K, 3, void>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ5_0: return q_run<Q5_0K, 3, PLEXUS_Q_WIDE(Pair32K512<Q5_0V>), 2>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ5_1: return q_run<Q5_1K, 3, void>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kIQ4_NL: return q_run<IQ4_NLK, 3, void>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kMXFP4: return q_run<MXFP4K, 3, void>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ2_K: return q_run<Q2_KK, 2, PLEXUS_Q_WIDE(Q2_KK512)>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ3_K: return q_run<Q3_KK, 2, PLEXUS_Q_WIDE(Q3_KK512)>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ4_K: return q_run<Q4_KK, 2, PLEXUS_Q_WIDE(Q4_KK512)>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ5_K: return q_run<Q5_KK, 2, PLEXUS_Q_WIDE(Q5_KK512)>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kQ6_K: return q_run<Q6_KK, 2, PLEXUS_Q_WIDE(Q6_KK512)>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kIQ4_XS: return q_run<IQ4_XSK, 2, PLEXUS_Q_WIDE(IQ4_XSK512)>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: return;
  }
}

#undef PLEXUS_Q_WIDE

}  // namespace
}  // namespace plexus
