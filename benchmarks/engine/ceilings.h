// Hardware ceilings measured in the benchmark's own run: memory read bandwidth and fp32 FMA
// peak, with the same threads the engine uses.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/thread_pool.h"

namespace plexus::bench {

// Bytes per second reading a buffer much larger than the last-level cache, each thread summing
// a contiguous share: the best (max over strategies of the median of `repeats` runs, strategies
// interleaved within each repeat) of plain wide loads, 4 or 8 independent streams per thread,
// software prefetch ahead in T0/T1/NTA, and 8 streams prefetched into L2 (the decode kernels'
// pattern), in 256- and (where the CPU has AVX-512) 512-bit loads.
struct ReadBandwidth {
  double bytes_per_s;
  const char* strategy;                                   // the winner, e.g. "avx512 prefetch t0"
  std::vector<std::pair<const char*, double>> medians;  // every strategy's median bytes/s
};
ReadBandwidth read_bandwidth(ThreadPool& pool, std::int64_t bytes, int repeats);

// fp32 FLOP per second of independent fused multiply-adds in registers (median of runs), in
// the vector width of the kernel table the engine runs (fma_peak_isa()); 0 for the generic table.
// The opt-in avx512bf16 table is measured against the fp32 zmm peak too (its bf16 dot products
// can run faster than that).
double fma_peak(ThreadPool& pool, int repeats);
// The probe fma_peak uses for best_isa()'s table: "avx2", "avx512" or "none" (generic).
const char* fma_peak_isa();

// Per-thread FMA loop (in probes_avx2.cpp): returns a value so the work is not optimised away.
float fma_loop_avx2(std::int64_t iterations);
// One read strategy: sum(p, n) returns the sum of p[0..n) so the loads are not optimised away.
struct ReadProbe {
  const char* name;
  float (*sum)(const float* p, std::int64_t n);
};
constexpr int kReadStrategies = 7;
constexpr int kReadPrefetchBytes = 2048;  // how far ahead the prefetching strategies ask
extern const ReadProbe kReadProbesAvx2[kReadStrategies];    // in probes_avx2.cpp
extern const ReadProbe kReadProbesAvx512[kReadStrategies];  // in probes_avx512.cpp
constexpr double kFlopPerIterationAvx2 = 12 * 8 * 2;  // 12 accumulators × 8 lanes × (mul + add)
// The same loop on 512-bit registers (in probes_avx512.cpp).
float fma_loop_avx512(std::int64_t iterations);
constexpr double kFlopPerIterationAvx512 = 12 * 16 * 2;

}  // namespace plexus::bench
