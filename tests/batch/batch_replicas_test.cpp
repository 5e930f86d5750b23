// Replicas of `plexus batch`: threads in one process (with and without virtual-device groups) and
// ranks under mpirun give exactly the single-replica output; a failing replica is worked around.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "batch_test_util.h"
#include "core/json.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::read_jsonl;
using testing::results_by_id;
using testing::run_plexus;
using testing::have_mpirun;
using testing::run_mpi;
using testing::shell_quote;

class BatchReplicas : public testing::BatchRunTest {
 protected:
  BatchReplicas() : BatchRunTest("batch_replicas", 4, 12, "--batch-size 3") {}
};

TEST_F(BatchReplicas, SameOutputWhateverTheReplicaCount) {
  const std::string one = dir_ / "one.jsonl", two = dir_ / "two.jsonl", groups = dir_ / "groups.jsonl";
  // The reference: one replica, one request at a time (--batch-size 1 instead of the fixture's 3;
  // an option given twice is refused).
  std::string reference = batch_args(one, "--threads 1");
  reference.replace(reference.find("--batch-size 3"), 14, "--batch-size 1");
  ASSERT_EQ(run_plexus(reference).exit_code, 0);
  const testing::ProcessResult r2 = run_plexus(batch_args(two, "--replicas 2 --threads 2 --json"));
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  const Json s = Json::parse(r2.out);
  ASSERT_EQ(s["replicas"].size(), 2u);
  EXPECT_EQ(s["replicas"][0]["done"].get<int>() + s["replicas"][1]["done"].get<int>(), 12);
  // 4 virtual devices as 2 replicas x 2 devices (a pipeline per replica).
  const testing::ProcessResult rg = run_plexus(batch_args(groups, "--replicas 2 --virtual-devices 4 --threads 2"));
  ASSERT_EQ(rg.exit_code, 0) << rg.err;
  {
    testing::ScopedEnv devices("PLEXUS_VIRTUAL_DEVICES", "4");  // the same, from the environment
    const testing::ProcessResult re = run_plexus(batch_args(dir_ / "env.jsonl", "--replicas 2 --threads 2"));
    ASSERT_EQ(re.exit_code, 0) << re.err;
    EXPECT_EQ(results_by_id(dir_ / "env.jsonl"), results_by_id(one));
  }
  EXPECT_EQ(results_by_id(two), results_by_id(one));
  EXPECT_EQ(results_by_id(groups), results_by_id(one));
  EXPECT_EQ(results_by_id(one).size(), 12u);
  // Replica indices are in range.
  for (const Json& l : read_jsonl(two)) EXPECT_TRUE(l["replica"] == Json(0) || l["replica"] == Json(1));

  const testing::ProcessResult uneven = run_plexus(batch_args(dir_ / "x.jsonl", "--replicas 2 --virtual-devices 3"));
  EXPECT_EQ(uneven.exit_code, 2) << uneven.err;
  EXPECT_NE(uneven.err.find("2 replicas on this machine (--replicas, or mpirun worker ranks) need the accelerators split into equal groups"), std::string::npos) << uneven.err;
}

// The results of greedy requests (write_requests samples every third one, from r1): those a
// tensor-parallel group must answer as one device does (sampled ones may differ in the last
// bits of a probability, which moves a draw).
std::map<std::string, Json> greedy_results(const std::string& path) {
  std::map<std::string, Json> out;
  for (const auto& [id, line] : results_by_id(path)) {
    const int i = std::stoi(line["id"].get<std::string>().substr(1));
    if (i % 3 != 1) out[id] = line;
  }
  return out;
}

TEST_F(BatchReplicas, ReplicasOfTensorParallelGroupsAnswerAsOneDevice) {
  const std::string one = dir_ / "one.jsonl", groups = dir_ / "tp.jsonl", implied = dir_ / "implied.jsonl";
  ASSERT_EQ(run_plexus(batch_args(one, "--threads 1")).exit_code, 0);
  // 2 replicas × a TP group of 2 on 4 virtual devices: replica k computes on devices 2k, 2k+1.
  const testing::ProcessResult r = run_plexus(batch_args(groups, "--replicas 2 --tp 2 --virtual-devices 4 --threads 2 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json s = Json::parse(r.out);
  ASSERT_EQ(s["replicas"].size(), 2u);
  EXPECT_EQ(s["done"], Json(12));
  EXPECT_EQ(results_by_id(groups).size(), 12u);
  EXPECT_EQ(greedy_results(groups), greedy_results(one));
  EXPECT_EQ(greedy_results(one).size(), 8u);
  // Without device flags, --tp 2 with 2 replicas implies the 4 virtual devices.
  const testing::ProcessResult ri = run_plexus(batch_args(implied, "--replicas 2 --tp 2 --threads 2"));
  ASSERT_EQ(ri.exit_code, 0) << ri.err;
  EXPECT_EQ(greedy_results(implied), greedy_results(one));
  // Too few devices for the groups: exit 2 before any work, naming the total needed.
  const std::string few = dir_ / "few.jsonl";
  const testing::ProcessResult bad = run_plexus(batch_args(few, "--replicas 2 --tp 2 --virtual-devices 2 --threads 2"));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("2 replicas (--replicas, or mpirun worker ranks on this machine) × --tp 2 × --pp 1 need 4 devices but each "
                         "replica has 1 of 2: give --virtual-devices 4"),
            std::string::npos)
      << bad.err;
  EXPECT_FALSE(std::filesystem::exists(few));
  // A size that cannot split the model's heads: exit 2 naming the sizes that work.
  const testing::ProcessResult odd = run_plexus(batch_args(few, "--replicas 2 --tp 3 --threads 2"));
  EXPECT_EQ(odd.exit_code, 2) << odd.err;
  EXPECT_NE(odd.err.find("--tp 3 cannot split this model"), std::string::npos) << odd.err;
}

TEST_F(BatchReplicas, AFailingReplicaIsWorkedAround) {
  const std::string base = dir_ / "base.jsonl", out = dir_ / "out.jsonl";
  ASSERT_EQ(run_plexus(batch_args(base, "--threads 1")).exit_code, 0);
  testing::ScopedEnv fail("PLEXUS_BATCH_FAIL", "replica=1");
  const testing::ProcessResult r = run_plexus(batch_args(out, "--replicas 2 --threads 2 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(results_by_id(out), results_by_id(base));
  for (const Json& l : read_jsonl(out)) EXPECT_EQ(l["replica"], Json(0));
  const Json s = Json::parse(r.out);
  EXPECT_EQ(s["replicas"][1]["done"], Json(0));
  EXPECT_EQ(s["retries"], s["replicas"][1]["failed_tries"]);  // every failed try was retried
  EXPECT_EQ(s["failed"], Json(0));
}

TEST_F(BatchReplicas, WhenEveryReplicaFailsEveryRequestIsReported) {
  const std::string out = dir_ / "out.jsonl";
  testing::ScopedEnv fail("PLEXUS_BATCH_FAIL", "replica=0,replica=1");
  const testing::ProcessResult r = run_plexus(batch_args(out, "--replicas 2 --threads 2 --json"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(read_jsonl(out).empty());
  EXPECT_EQ(read_jsonl(dir_ / "out.errors.jsonl").size(), 12u);
  const Json s = Json::parse(r.out);
  EXPECT_EQ(s["failed"], Json(12));
  // One replica was taken out; the last one stays and each request used its own tries.
  EXPECT_EQ(s["replicas"][0]["taken_out"].get<bool>() + s["replicas"][1]["taken_out"].get<bool>(), 1);
}

TEST_F(BatchReplicas, MpirunRanksGiveTheSingleProcessOutput) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const std::string one = dir_ / "one.jsonl", mpi = dir_ / "mpi.jsonl";
  ASSERT_EQ(run_plexus(batch_args(one, "--threads 1")).exit_code, 0);
  const testing::ProcessResult r = run_mpi(2, batch_args(mpi, "--threads 1 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(results_by_id(mpi), results_by_id(one));
  const Json s = Json::parse(r.out);  // only rank 0 prints
  EXPECT_EQ(s["done"], Json(12));
  EXPECT_EQ(s["replicas"].size(), 1u);  // rank 1; rank 0 coordinates
  for (const Json& l : read_jsonl(mpi)) EXPECT_EQ(l["replica"], Json(0));
  // A bad line ends every rank with exit 2 before any work.
  std::ofstream(in(), std::ios::app) << "garbage\n";
  const testing::ProcessResult bad = run_mpi(2, batch_args(dir_ / "bad.jsonl", "--threads 1"));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find(in() + ":13: not JSON"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "bad.jsonl"));
}

// Under mpirun every worker rank runs its replica as an in-process TP group over virtual devices
// of its own (the ranks of one machine split them); rank 0 coordinates.
TEST_F(BatchReplicas, MpirunWorkerRanksRunTensorParallelGroups) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const std::string one = dir_ / "one.jsonl", mpi = dir_ / "mpi.jsonl";
  ASSERT_EQ(run_plexus(batch_args(one, "--threads 1")).exit_code, 0);
  const testing::ProcessResult r = run_mpi(3, batch_args(mpi, "--tp 2 --threads 2 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json s = Json::parse(r.out);
  EXPECT_EQ(s["done"], Json(12));
  EXPECT_EQ(s["replicas"].size(), 2u);
  EXPECT_EQ(greedy_results(mpi), greedy_results(one));
}

TEST_F(BatchReplicas, MpirunWorksAroundAFailingRankAndResumes) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const std::string one = dir_ / "one.jsonl", mpi = dir_ / "mpi.jsonl";
  ASSERT_EQ(run_plexus(batch_args(one, "--threads 1")).exit_code, 0);
  // Crash rank 0 (the writer) after 4 results: mpirun ends the job; the rerun resumes.
  const testing::ProcessResult crashed = run_mpi(3, batch_args(mpi, "--threads 1"), "PLEXUS_BATCH_FAIL=kill_after=4");
  EXPECT_NE(crashed.exit_code, 0);
  EXPECT_EQ(read_jsonl(mpi).size(), 4u);
  // Rank 2 (replica 1) fails every request; rank 1 does them all.
  const testing::ProcessResult r = run_mpi(3, batch_args(mpi, "--threads 1 --json"), "PLEXUS_BATCH_FAIL=replica=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(results_by_id(mpi), results_by_id(one));
  const Json s = Json::parse(r.out);
  EXPECT_EQ(s["resumed"], Json(4));
  EXPECT_EQ(s["replicas"][1]["done"], Json(0));
}

}  // namespace
}  // namespace plexus
