// Ceiling probe in AVX-512: the FMA throughput loop on 512-bit registers (12 independent
// accumulators hide the FMA latency on two pipes), for hosts whose engine runs the avx512 table.
#include <immintrin.h>

#include "ceilings.h"

namespace plexus::bench {

float fma_loop_avx512(std::int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (std::int64_t it = 0; it < iterations; ++it) {
    // Fully unrolled, so the accumulators stay in registers.
    _Pragma("GCC unroll 12") for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0] + out[15];
}

}  // namespace plexus::bench
