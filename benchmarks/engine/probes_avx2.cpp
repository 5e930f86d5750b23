// Ceiling probes in AVX2: the FMA throughput loop (12 independent accumulators hide the FMA
// latency on two pipes) and a streaming read with 8 independent sums (bound by memory, not by
// add latency).
#include <immintrin.h>

#include "ceilings.h"

namespace plexus::bench {

float fma_loop_avx2(std::int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (std::int64_t it = 0; it < iterations; ++it) {
    // Fully unrolled, so the accumulators stay in registers.
    _Pragma("GCC unroll 12") for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

float read_sum_avx2(const float* p, std::int64_t n) {
  __m256 acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    _Pragma("GCC unroll 8") for (int v = 0; v < 8; ++v) acc[v] = _mm256_add_ps(acc[v], _mm256_loadu_ps(p + i + 8 * v));
  }
  for (int v = 1; v < 8; ++v) acc[0] = _mm256_add_ps(acc[0], acc[v]);
  float out[8];
  _mm256_storeu_ps(out, acc[0]);
  float s = out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
  for (; i < n; ++i) s += p[i];
  return s;
}

}  // namespace plexus::bench
