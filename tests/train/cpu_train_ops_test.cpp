// CpuTrainOps against RefTrainOps on random shapes with odd sizes (1, 3, 17, 65, and GEMMs that
// cross the packing chunks), for every ISA this CPU runs; and bitwise the same results with 1, 2
// and 3 threads. The cases: train_ops_cases.h (CudaTrainOps' test runs them too).
#include "train/cpu_train_ops.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "train/ref_train_ops.h"
#include "train_ops_cases.h"

namespace plexus {
namespace {

using testing_train::Outputs;
using testing_train::run_all;

std::vector<Isa> isas() {
  std::vector<Isa> v;
  for (Isa i : {Isa::kGeneric, Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(i)) v.push_back(i);
  return v;
}

TEST(CpuTrainOps, MatchesRefTrainOps) {
  RefTrainOps ref;
  const Outputs want = run_all(ref);
  for (Isa isa : isas()) {
    ThreadPool pool(2);
    CpuTrainOps ops(pool, isa);
    testing_train::expect_near(run_all(ops), want, std::string(isa_name(isa)), 2e-6);
  }
}

TEST(CpuTrainOps, BitwiseIndependentOfThreadCount) {
  for (Isa isa : isas()) {
    std::vector<Outputs> runs;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      CpuTrainOps ops(pool, isa);
      runs.push_back(run_all(ops));
    }
    for (std::size_t r = 1; r < runs.size(); ++r)
      testing_train::expect_bitwise(runs[r], runs[0],
                                    std::string(isa_name(isa)) + ": " + std::to_string(r + 1) + " threads vs 1");
  }
}

}  // namespace
}  // namespace plexus
