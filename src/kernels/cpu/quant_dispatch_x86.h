// q_dispatch: the register tiles of each block format's x86 kernel (quant_blocks_x86.h, and the
// 512-bit decode kernels of quant_blocks512_x86.h in the VNNI build), included by the AVX2 file
// and the AVX-512 VNNI file. Define PLEXUS_Q_VNNI (0 or 1) and include <immintrin.h> first.
#pragma once
#include <cstdlib>

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

// dot_tile_q for one table: the register tiles per format.
void q_dispatch(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  const std::int64_t nb = k / dtype_block_elems(wt);
  switch (wt) {
    case DType::kQ8_0: q_dot_tile<Q8_0K, 4, 3, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb); break;
    case DType::kQ4_0:
#if PLEXUS_Q_VNNI
      if (nt == 1 && nb % 2 == 0 && q_wide_decode()) return q_tile_rows<Pair32K512<Q4_0V>, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb / 2);
#endif
      q_dot_tile<Q4_0K, 4, 3, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kQ4_K:
#if PLEXUS_Q_VNNI
      if (nt == 1 && q_wide_decode()) return q_tile_rows<Q4_KK512, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb);
#endif
      q_dot_tile<Q4_KK, 4, 2, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kQ6_K:
#if PLEXUS_Q_VNNI
      if (nt == 1 && q_wide_decode()) return q_tile_rows<Q6_KK512, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb);
#endif
      q_dot_tile<Q6_KK, 4, 2, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kQ4_1:
#if PLEXUS_Q_VNNI
      if (nt == 1 && nb % 2 == 0 && q_wide_decode()) return q_tile_rows<Pair32K512<Q4_1V>, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb / 2);
#endif
      q_dot_tile<Q4_1K, 4, 3, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kQ5_0:
#if PLEXUS_Q_VNNI
      if (nt == 1 && nb % 2 == 0 && q_wide_decode()) return q_tile_rows<Pair32K512<Q5_0V>, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb / 2);
#endif
      q_dot_tile<Q5_0K, 4, 3, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kQ5_1:
#if PLEXUS_Q_VNNI
      if (nt == 1 && nb % 2 == 0 && q_wide_decode()) return q_tile_rows<Pair32K512<Q5_1V>, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb / 2);
#endif
      q_dot_tile<Q5_1K, 4, 3, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kIQ4_NL:
#if PLEXUS_Q_VNNI
      if (nt == 1 && nb % 2 == 0 && q_wide_decode()) return q_tile_rows<Pair32K512<IQ4_NLV>, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb / 2);
#endif
      q_dot_tile<IQ4_NLK, 4, 3, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kQ5_K:
#if PLEXUS_Q_VNNI
      if (nt == 1 && q_wide_decode()) return q_tile_rows<Q5_KK512, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb);
#endif
      q_dot_tile<Q5_KK, 4, 2, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kQ3_K:
#if PLEXUS_Q_VNNI
      if (nt == 1 && q_wide_decode()) return q_tile_rows<Q3_KK512, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb);
#endif
      q_dot_tile<Q3_KK, 4, 2, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kIQ4_XS:
#if PLEXUS_Q_VNNI
      if (nt == 1 && q_wide_decode()) return q_tile_rows<IQ4_XSK512, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb);
#endif
      q_dot_tile<IQ4_XSK, 4, 2, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kQ2_K:
#if PLEXUS_Q_VNNI
      if (nt == 1 && q_wide_decode()) return q_tile_rows<Q2_KK512, 1, 4, true>(static_cast<const std::uint8_t*>(w), ldw, static_cast<const std::uint8_t*>(xq), ldxq, y, ldy, nr, nb);
#endif
      q_dot_tile<Q2_KK, 4, 2, 4>(w, ldw, xq, ldxq, y, ldy, nt, nr, nb);
      break;
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: break;
  }
}

}  // namespace
}  // namespace plexus
