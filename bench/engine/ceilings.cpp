// Bandwidth and FMA-peak probes.
#include "ceilings.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "core/timer.h"
#include "kernels/cpu/isa.h"

namespace plexus::bench {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

double read_bandwidth(ThreadPool& pool, std::int64_t bytes, int repeats) {
  const std::int64_t n = bytes / 4;
  std::vector<float> buf(static_cast<std::size_t>(n));
  pool.parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) { std::fill(buf.begin() + b, buf.begin() + e, 1.0f); });
  const IsaKernels& k = isa_kernels(best_isa());
  const bool avx2 = isa_supported(Isa::kAvx2);
  std::vector<double> rates;
  std::atomic<float> sink{0};
  for (int r = 0; r < repeats; ++r) {
    Timer t;
    pool.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) { 
      sink = sink + (avx2 ? read_sum_avx2(buf.data() + b, e - b) : k.sum_squares(buf.data() + b, e - b));
    });
    rates.push_back(static_cast<double>(bytes) / t.seconds());
  }
  return median(rates);
}

double fma_peak(ThreadPool& pool, int repeats) {
  if (!isa_supported(Isa::kAvx2)) return 0;
  const std::int64_t iterations = 20'000'000;
  std::vector<double> rates;
  std::atomic<float> sink{0};
  for (int r = 0; r < repeats; ++r) {
    Timer t;
    auto task = [&](std::int64_t, int) { sink = sink + fma_loop_avx2(iterations); };
    pool.run_chunks(pool.size(), ChunkFn(task));
    rates.push_back(kFlopPerIterationAvx2 * static_cast<double>(iterations) * pool.size() / t.seconds());
  }
  return median(rates);
}

}  // namespace plexus::bench
