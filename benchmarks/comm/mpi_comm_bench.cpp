// All-reduce latency and bandwidth of the MPI collective (comm/mpi_collective.h: ordered sum by
// alltoallv + allgatherv) for 4 KB – 64 MB messages, beside MPI's own MPI_Allreduce (the
// library's reduction order, not used by plexus: a reference) in the same run. Run under mpirun:
//   mpirun -np 2 --oversubscribe build/benchmarks/mpi_comm_bench [--min-kb 4] [--max-mb 64] [--repeats N] [--json]
// A call's time is the slowest rank's (the median over repeats of the maximum over ranks).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "message_repeats.h"
#include "comm/mpi_collective.h"
#include "comm/mpi_world.h"
#include "core/json.h"

namespace {

using plexus::median;
using plexus::repeats_for;

// Median over `repeats` of the slowest rank's seconds for `call`, after one warm-up call.
template <class F>
double timed(int repeats, F call) {
  call();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    call();
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.push_back(slowest);
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  plexus::MpiWorld world(&argc, &argv);
  long min_kb = 4, max_mb = 64;
  int repeats = 0;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--min-kb" && i + 1 < argc) min_kb = std::atol(argv[++i]);
    else if (a == "--max-mb" && i + 1 < argc) max_mb = std::atol(argv[++i]);
    else if (a == "--repeats" && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (a == "--json") json = true;
    else {
      if (world.rank() == 0) std::fprintf(stderr, "usage: mpirun -np N mpi_comm_bench [--min-kb K] [--max-mb M] [--repeats R] [--json]\n");
      return 2;
    }
  }
  plexus::MpiCollective c;
  plexus::Json rows = plexus::Json::array();
  if (world.rank() == 0 && !json) {
    std::printf("MPI all-reduce, %d ranks (%d on this machine); seconds are the slowest rank's, median\n", world.size(), world.local_size());
    std::printf("%10s %12s %12s %12s %12s %8s\n", "bytes", "plexus us", "plexus GB/s", "MPI_Allred us", "MPI GB/s", "repeats");
  }
  for (std::size_t bytes = static_cast<std::size_t>(min_kb) * 1024; bytes <= static_cast<std::size_t>(max_mb) << 20; bytes *= 4) {
    const auto count = static_cast<std::int64_t>(bytes / sizeof(float));
    std::vector<float> data(static_cast<std::size_t>(count), 1.0f + static_cast<float>(world.rank())), out(data.size());
    const int r = repeats_for(bytes, repeats);
    const double ours = timed(r, [&] { c.all_reduce_sum(data.data(), count); std::fill(data.begin(), data.end(), 1.0f); });
    const double lib = timed(r, [&] {
      MPI_Allreduce(data.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      std::fill(data.begin(), data.end(), 1.0f);
    });
    // Bandwidth as algorithm bytes per second (the message size over the time).
    const double gb_ours = static_cast<double>(bytes) / ours / 1e9, gb_lib = static_cast<double>(bytes) / lib / 1e9;
    if (world.rank() == 0) {
      if (json) {
        rows.push_back({{"bytes", bytes}, {"plexus_s", ours}, {"plexus_gb_s", gb_ours}, {"mpi_allreduce_s", lib}, {"mpi_allreduce_gb_s", gb_lib}, {"repeats", r}});
      } else {
        std::printf("%10zu %12.1f %12.3f %12.1f %12.3f %8d\n", bytes, ours * 1e6, gb_ours, lib * 1e6, gb_lib, r);
        std::fflush(stdout);
      }
    }
  }
  if (world.rank() == 0 && json) {
    std::printf("%s\n", plexus::Json{{"ranks", world.size()}, {"local_ranks", world.local_size()}, {"all_reduce", rows}}.dump().c_str());
  }
  return 0;
}
