// `mpirun -np 2` data parallelism: mpi_replica_check's two MPI ranks give one replica's losses
// within 1e-5, and the very bits of two in-process replicas (both sum in rank order).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "replica_run.h"
#include "test_util.h"

namespace plexus {
namespace {

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

TEST(MpiReplicas, TwoRanksMatchOneReplicaAndTwoInProcess) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  testing::TempDir dir("mpi_replicas");
  const std::string model = dir / "m";
  ASSERT_EQ(testing::run_plexus("make-model " + model + " --preset tiny --vocab 300 --dtype f32").exit_code, 0);
  for (const int zero1 : {0, 1}) {
    testing::RunSpec spec;
    spec.zero1 = zero1 != 0;
    const testing::RunResult one = testing::run_replicas(model, spec);
    spec.replicas = 2;
    const testing::RunResult two = testing::run_replicas(model, spec);
    const std::string weights = dir / ("weights" + std::to_string(zero1) + ".f32");
    const testing::ProcessResult r = testing::run_command(
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "
        "timeout 300 mpirun -np 2 --oversubscribe " + testing::shell_quote(PLEXUS_MPI_REPLICA_CHECK) + " " +
        testing::shell_quote(model) + " " + std::to_string(spec.B) + " " + std::to_string(spec.T) + " " +
        std::to_string(spec.steps) + " " + std::to_string(zero1) + " " + testing::shell_quote(weights));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::string hashes[2];
    for (int rank = 0; rank < 2; ++rank) {
      for (int s = 0; s < spec.steps; ++s) {
        const std::string key = "rank " + std::to_string(rank) + " step " + std::to_string(s) + " loss ";
        const std::size_t at = r.out.find(key);
        ASSERT_NE(at, std::string::npos) << r.out;
        const double loss = std::strtod(r.out.c_str() + at + key.size(), nullptr);
        EXPECT_NEAR(loss, one.steps[static_cast<std::size_t>(s)].loss, 1e-5) << key;
        EXPECT_EQ(loss, two.steps[static_cast<std::size_t>(s)].loss) << key;
      }
      const std::string key = "rank " + std::to_string(rank) + " weights ";
      const std::size_t at = r.out.find(key);
      ASSERT_NE(at, std::string::npos) << r.out;
      hashes[rank] = r.out.substr(at + key.size(), 16);
    }
    EXPECT_EQ(hashes[0], hashes[1]) << "the ranks' weights differ";
    std::ifstream in(weights, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size(), two.params[0].size() * sizeof(float));
    EXPECT_EQ(std::memcmp(bytes.data(), two.params[0].data(), bytes.size()), 0)
        << "mpirun's weights are not the bits of two in-process replicas (zero1 " << zero1 << ")";
  }
}

}  // namespace
}  // namespace plexus
