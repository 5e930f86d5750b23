// Bandwidth and FMA-peak probes.
#include "ceilings.h"

#include <algorithm>
#include <atomic>
#include <thread>
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

// Runs fn(t) on n threads started together (plain threads, not the pool: the pool lets the
// caller take a slow worker's share, which would understate a ceiling) and returns seconds.
template <typename F>
double timed_on_threads(int n, F fn) {
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      ready++;
      while (!go.load()) {
      }
      fn(t);
    });
  }
  while (ready.load() != n) {
  }
  Timer timer;
  go = true;
  for (auto& th : threads) th.join();
  return timer.seconds();
}

ReadBandwidth read_bandwidth(ThreadPool& pool, std::int64_t bytes, int repeats) {
  const std::int64_t n = bytes / 4;
  std::vector<float> buf(static_cast<std::size_t>(n));
  pool.parallel_for(n, 1024, [&](std::int64_t b, std::int64_t e) { std::fill(buf.begin() + b, buf.begin() + e, 1.0f); });
  std::vector<ReadProbe> probes;
  if (isa_supported(Isa::kAvx2)) probes.assign(kReadProbesAvx2, kReadProbesAvx2 + kReadStrategies);
  if (isa_supported(Isa::kAvx512)) probes.insert(probes.end(), kReadProbesAvx512, kReadProbesAvx512 + kReadStrategies);
  if (probes.empty()) probes.push_back({"generic sum of squares", isa_kernels(Isa::kGeneric).sum_squares});
  const int nt = pool.size();
  std::vector<std::vector<double>> rates(probes.size());
  std::atomic<float> sink{0};
  for (int r = 0; r < repeats; ++r) {
    for (std::size_t i = 0; i < probes.size(); ++i) {
      const double s = timed_on_threads(nt, [&](int t) {
        const std::int64_t b = n * t / nt, e = n * (t + 1) / nt;
        sink = sink + probes[i].sum(buf.data() + b, e - b);
      });
      rates[i].push_back(static_cast<double>(bytes) / s);
    }
  }
  ReadBandwidth best{0, "", {}};
  for (std::size_t i = 0; i < probes.size(); ++i) {
    const double m = median(rates[i]);
    best.medians.emplace_back(probes[i].name, m);
    if (m > best.bytes_per_s) best.bytes_per_s = m, best.strategy = probes[i].name;
  }
  return best;
}

const char* fma_peak_isa() {
  switch (best_isa()) {
    case Isa::kGeneric: return "none";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512:
    case Isa::kAvx512Bf16: return "avx512";  // fp32 zmm FMAs for both
  }
  return "none";
}

double fma_peak(ThreadPool& pool, int repeats) {
  const Isa isa = best_isa();
  if (isa == Isa::kGeneric) return 0;
  const bool avx512 = isa == Isa::kAvx512 || isa == Isa::kAvx512Bf16;
  const std::int64_t iterations = 20'000'000;
  std::vector<double> rates;
  std::atomic<float> sink{0};
  for (int r = 0; r < repeats; ++r) {
    const double s = timed_on_threads(pool.size(), [&](int) {
      sink = sink + (avx512 ? fma_loop_avx512(iterations) : fma_loop_avx2(iterations));
    });
    const double flop_per_iteration = avx512 ? kFlopPerIterationAvx512 : kFlopPerIterationAvx2;
    rates.push_back(flop_per_iteration * static_cast<double>(iterations) * pool.size() / s);
  }
  return median(rates);
}

}  // namespace plexus::bench
