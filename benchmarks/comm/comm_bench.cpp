// Collectives benchmark: all-reduce latency and bandwidth of the in-process group (ranks on
// threads, as tensor parallelism on virtual CPU devices runs them) for 4 KB – 64 MB messages,
// median of several repeats, beside a ceiling measured in the same run: one thread's memcpy of
// the same size (an all-reduce must at least write the whole message on every rank).
// Usage: comm_bench [--ranks 2,4] [--min-kb 4] [--max-mb 64] [--repeats N] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "message_repeats.h"
#include "comm/in_process_group.h"
#include "core/error.h"
#include "core/json.h"

namespace plexus {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds of one memcpy of `bytes` (the median of `repeats`), source and destination warm.
double memcpy_seconds(std::size_t bytes, int repeats) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  std::memcpy(b.data(), a.data(), bytes);
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    a[static_cast<std::size_t>(i) % bytes] = static_cast<char>(b[(static_cast<std::size_t>(i) * 7) % bytes] + 1);  // not optimised away
  }
  return median(t);
}

struct AllReduceTime {
  double median_s = 0, min_s = 0;
  bool correct = true;
};

// One all-reduce of `bytes` on `ranks` threads, `repeats` times after a warm-up; a call's time is
// the slowest rank's (the collective ends when every rank has the sum).
AllReduceTime all_reduce_seconds(int ranks, std::size_t bytes, int repeats) {
  const std::int64_t count = static_cast<std::int64_t>(bytes / sizeof(float));
  InProcessGroup group(ranks);
  std::vector<std::vector<float>> data(static_cast<std::size_t>(ranks), std::vector<float>(static_cast<std::size_t>(count)));
  std::vector<std::vector<double>> seconds(static_cast<std::size_t>(ranks), std::vector<double>(static_cast<std::size_t>(repeats)));
  std::vector<char> ok(static_cast<std::size_t>(ranks), 1);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        Collective& c = group.rank(r);
        std::vector<float>& d = data[static_cast<std::size_t>(r)];
        for (int i = -1; i < repeats; ++i) {  // i = -1: warm-up
          std::fill(d.begin(), d.end(), static_cast<float>(r + 1));
          c.barrier();
          const auto t0 = Clock::now();
          c.all_reduce_sum(d.data(), count);
          const double s = std::chrono::duration<double>(Clock::now() - t0).count();
          if (i >= 0) seconds[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] = s;
          const float want = static_cast<float>(ranks * (ranks + 1) / 2);
          if (d.front() != want || d.back() != want || d[d.size() / 2] != want) ok[static_cast<std::size_t>(r)] = 0;
        }
      });
    }
  }
  std::vector<double> slowest(static_cast<std::size_t>(repeats), 0);
  for (int i = 0; i < repeats; ++i) {
    for (int r = 0; r < ranks; ++r) slowest[static_cast<std::size_t>(i)] = std::max(slowest[static_cast<std::size_t>(i)], seconds[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]);
  }
  AllReduceTime out;
  out.median_s = median(slowest);
  out.min_s = *std::min_element(slowest.begin(), slowest.end());
  out.correct = std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
  return out;
}

std::vector<int> parse_ranks(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const int r = std::atoi(text.substr(start, comma - start).c_str());
    if (r < 2 || r > 64) throw InputError("--ranks: each count must be between 2 and 64, got '" + text + "'");
    out.push_back(r);
    start = comma + 1;
  }
  return out;
}

std::string size_label(std::size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

int main_impl(int argc, char** argv) {
  std::vector<int> rank_counts = {2, 4};
  std::size_t min_bytes = 4u << 10, max_bytes = 64u << 20;
  int repeats = 0;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--json") {
      json = true;
      continue;
    }
    if (i + 1 >= argc) throw InputError(flag + ": needs a value (usage: comm_bench [--ranks 2,4] [--min-kb 4] [--max-mb 64] [--repeats N] [--json])");
    const std::string v = argv[++i];
    if (flag == "--ranks") rank_counts = parse_ranks(v);
    else if (flag == "--min-kb") min_bytes = static_cast<std::size_t>(std::max(1, std::atoi(v.c_str()))) << 10;
    else if (flag == "--max-mb") max_bytes = static_cast<std::size_t>(std::max(1, std::atoi(v.c_str()))) << 20;
    else if (flag == "--repeats") repeats = std::max(1, std::atoi(v.c_str()));
    else throw InputError("unknown option " + flag + " (usage: comm_bench [--ranks 2,4] [--min-kb 4] [--max-mb 64] [--repeats N] [--json])");
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (!json) {
    std::printf("in-process all-reduce (sum of float32, ranks = threads, %u hardware threads); median of the repeats,\n"
                "a call's time = its slowest rank's. alg GB/s = message bytes / time; copy GB/s = one thread's memcpy of\n"
                "the same bytes in this run (the ceiling: every rank must write the whole sum); vs copy = alg / copy.\n\n",
                cores);
    std::printf("%5s %9s %7s %11s %11s %9s %9s %8s\n", "ranks", "message", "repeats", "median us", "min us", "alg GB/s", "copy GB/s",
                "vs copy");
  }
  Json rows = Json::array();
  bool all_correct = true;
  for (const int ranks : rank_counts) {
    for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
      const int n = repeats_for(bytes, repeats);
      const AllReduceTime t = all_reduce_seconds(ranks, bytes, n);
      const double copy = memcpy_seconds(bytes, n);
      const double alg = static_cast<double>(bytes) / t.median_s / 1e9, ceiling = static_cast<double>(bytes) / copy / 1e9;
      all_correct = all_correct && t.correct;
      rows.push_back({{"implementation", "in-process"}, {"ranks", ranks}, {"bytes", bytes}, {"repeats", n},
                      {"median_us", t.median_s * 1e6}, {"min_us", t.min_s * 1e6}, {"alg_gb_per_s", alg},
                      {"copy_gb_per_s", ceiling}, {"vs_copy", alg / ceiling}, {"correct", t.correct}});
      if (!json) {
        std::printf("%5d %9s %7d %11.1f %11.1f %9.2f %9.2f %8.3f%s\n", ranks, size_label(bytes).c_str(), n, t.median_s * 1e6,
                    t.min_s * 1e6, alg, ceiling, alg / ceiling, t.correct ? "" : "  WRONG SUM");
        std::fflush(stdout);
      }
    }
  }
  if (json) std::printf("%s\n", Json{{"hardware_threads", cores}, {"all_reduce", rows}}.dump(1).c_str());
  else std::printf("\nThe MPI collective: mpirun -np N build/benchmarks/mpi_comm_bench (docs/benchmarks.md).\n");
  return all_correct ? 0 : 1;
}

}  // namespace
}  // namespace plexus

int main(int argc, char** argv) {
  try {
    return plexus::main_impl(argc, argv);
  } catch (const plexus::Error& e) {
    std::fprintf(stderr, "comm_bench: %s\n", e.what());
    return 2;
  }
}
