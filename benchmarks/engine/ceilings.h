// Hardware ceilings measured in the benchmark's own run: memory read bandwidth and fp32 FMA
// peak, with the same threads the engine uses.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"

namespace plexus::bench {

// Bytes per second reading a buffer much larger than the last-level cache (median of runs).
double read_bandwidth(ThreadPool& pool, std::int64_t bytes, int repeats);

// fp32 FLOP per second of independent fused multiply-adds in registers (median of runs), in
// the vector width of the kernel table the engine runs (fma_peak_isa()); 0 for the generic table.
// The opt-in avx512bf16 table is measured against the fp32 zmm peak too (its bf16 dot products
// can run faster than that).
double fma_peak(ThreadPool& pool, int repeats);
// The probe fma_peak uses for best_isa()'s table: "avx2", "avx512" or "none" (generic).
const char* fma_peak_isa();

// Per-thread FMA loop (in probes_avx2.cpp): returns a value so the work is not optimised away.
float fma_loop_avx2(std::int64_t iterations);
// Sum of p[0..n) with 8 independent accumulators (in probes_avx2.cpp).
float read_sum_avx2(const float* p, std::int64_t n);
constexpr double kFlopPerIterationAvx2 = 12 * 8 * 2;  // 12 accumulators × 8 lanes × (mul + add)
// The same loop on 512-bit registers (in probes_avx512.cpp).
float fma_loop_avx512(std::int64_t iterations);
constexpr double kFlopPerIterationAvx512 = 12 * 16 * 2;

}  // namespace plexus::bench
