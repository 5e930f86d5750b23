// Ceiling probes in AVX2: the FMA throughput loop (12 independent accumulators hide the FMA
// latency on two pipes) and the streaming reads of read_bandwidth's strategies on 256-bit loads
// (8 independent sums, so they are bound by memory, not by add latency).
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

namespace {

// Sum of p[0..n): `Streams` equal sub-ranges read side by side (at least a cache line and
// 8 / Streams vectors from each per step), with a software prefetch `kReadPrefetchBytes` ahead in
// hint `Hint` (-1: none).
template <int Streams, int Hint>
float read_sum(const float* p, std::int64_t n) {
  constexpr int kPer = 8 / Streams > 2 ? 8 / Streams : 2;  // vectors per stream per step
  constexpr int kAcc = Streams * kPer;
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_setzero_ps();
  const std::int64_t len = n / Streams / (8 * kPer) * (8 * kPer);  // floats per stream
  for (std::int64_t i = 0; i < len; i += 8 * kPer) {
    _Pragma("GCC unroll 8") for (int s = 0; s < Streams; ++s) {
      const float* q = p + s * len + i;
      if constexpr (Hint >= 0) {
        _Pragma("GCC unroll 8") for (int c = 0; c < kPer * 32; c += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(q) + kReadPrefetchBytes + c, static_cast<_mm_hint>(Hint));
        }
      }
      _Pragma("GCC unroll 8") for (int v = 0; v < kPer; ++v) acc[s * kPer + v] = _mm256_add_ps(acc[s * kPer + v], _mm256_loadu_ps(q + 8 * v));
    }
  }
  for (int v = 1; v < kAcc; ++v) acc[0] = _mm256_add_ps(acc[0], acc[v]);
  float out[8];
  _mm256_storeu_ps(out, acc[0]);
  float s = out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
  for (std::int64_t i = Streams * len; i < n; ++i) s += p[i];
  return s;
}

}  // namespace

const ReadProbe kReadProbesAvx2[kReadStrategies] = {
    {"avx2 plain", read_sum<1, -1>},
    {"avx2 4 streams", read_sum<4, -1>},
    {"avx2 8 streams", read_sum<8, -1>},
    {"avx2 8 streams prefetch t1", read_sum<8, _MM_HINT_T1>},
    {"avx2 prefetch t0", read_sum<1, _MM_HINT_T0>},
    {"avx2 prefetch t1", read_sum<1, _MM_HINT_T1>},
    {"avx2 prefetch nta", read_sum<1, _MM_HINT_NTA>},
};

}  // namespace plexus::bench
