// comm/mpi_collective.h between real processes: mpirun starts mpi_collective_check (its checks
// are in that file) on 2 and 3 ranks; every rank must report every check passed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "test_util.h"

namespace plexus {
namespace {

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

testing::ProcessResult run_check(int np) {
  return testing::run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "
                              "timeout 120 mpirun -np " + std::to_string(np) + " --oversubscribe " +
                              testing::shell_quote(PLEXUS_MPI_COLLECTIVE_CHECK));
}

TEST(MpiCollective, EveryCollectiveOnTwoAndThreeRanks) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  for (int np : {2, 3}) {
    const testing::ProcessResult r = run_check(np);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.err.find("FAILED"), std::string::npos) << r.err;
    for (int rank = 0; rank < np; ++rank) {
      const std::string line = "rank " + std::to_string(rank) + " of " + std::to_string(np) + ": ";
      const std::size_t at = r.out.find(line);
      ASSERT_NE(at, std::string::npos) << r.out;
      EXPECT_EQ(r.out.compare(r.out.find(", ", at), 11, ", 0 failed\n"), 0) << r.out;
    }
  }
}

}  // namespace
}  // namespace plexus
