// Ceiling probes in AVX-512: the FMA throughput loop on 512-bit registers (12 independent
// accumulators hide the FMA latency on two pipes), for hosts whose engine runs the avx512 table,
// and the streaming reads of read_bandwidth's strategies on 512-bit loads.
#include "ceilings.h"
#include "kernels/cpu/avx512_intrinsics.h"

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

namespace {

// Sum of p[0..n): `Streams` equal sub-ranges read side by side (at least a cache line and
// 8 / Streams vectors from each per step), with a software prefetch `kReadPrefetchBytes` ahead in
// hint `Hint` (-1: none).
template <int Streams, int Hint>
float read_sum(const float* p, std::int64_t n) {
  constexpr int kPer = 8 / Streams > 1 ? 8 / Streams : 1;  // vectors per stream per step
  constexpr int kAcc = Streams * kPer;
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_setzero_ps();
  const std::int64_t len = n / Streams / (16 * kPer) * (16 * kPer);  // floats per stream
  for (std::int64_t i = 0; i < len; i += 16 * kPer) {
    _Pragma("GCC unroll 8") for (int s = 0; s < Streams; ++s) {
      const float* q = p + s * len + i;
      if constexpr (Hint >= 0) {
        _Pragma("GCC unroll 8") for (int c = 0; c < kPer * 64; c += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(q) + kReadPrefetchBytes + c, static_cast<_mm_hint>(Hint));
        }
      }
      _Pragma("GCC unroll 8") for (int v = 0; v < kPer; ++v) acc[s * kPer + v] = _mm512_add_ps(acc[s * kPer + v], _mm512_loadu_ps(q + 16 * v));
    }
  }
  for (int v = 1; v < kAcc; ++v) acc[0] = _mm512_add_ps(acc[0], acc[v]);
  float s = _mm512_reduce_add_ps(acc[0]);
  for (std::int64_t i = Streams * len; i < n; ++i) s += p[i];
  return s;
}

}  // namespace

const ReadProbe kReadProbesAvx512[kReadStrategies] = {
    {"avx512 plain", read_sum<1, -1>},
    {"avx512 4 streams", read_sum<4, -1>},
    {"avx512 8 streams", read_sum<8, -1>},
    {"avx512 8 streams prefetch t1", read_sum<8, _MM_HINT_T1>},
    {"avx512 prefetch t0", read_sum<1, _MM_HINT_T0>},
    {"avx512 prefetch t1", read_sum<1, _MM_HINT_T1>},
    {"avx512 prefetch nta", read_sum<1, _MM_HINT_NTA>},
};

}  // namespace plexus::bench
