// The FMA throughput loop: 12 independent accumulators hide the FMA latency on two pipes.
#include <immintrin.h>

#include "ceilings.h"

namespace plexus::bench {

float fma_loop_avx2(std::int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (std::int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

}  // namespace plexus::bench
