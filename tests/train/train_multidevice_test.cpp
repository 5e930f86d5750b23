// Data parallelism as the user runs it: --replicas 2, --virtual-devices 2, --zero 1 and
// mpirun -np 2 give the losses of one replica (within 1e-5); mpirun with --checkpoint-activations
// gives its own bits.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "train_cli_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;
using train_test::train_args;

class TrainMultidevice : public ::testing::Test {
 protected:
  void SetUp() override { train_test::make_inputs(dir_); }
  // The losses of a run (`steps` of batch 4) with `extra` flags.
  std::vector<double> losses(const testing::ProcessResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<double> out;
    if (r.exit_code != 0) return out;
    const Json j = Json::parse(r.out);
    for (const Json& s : j["steps"]) out.push_back(s["loss"].get<double>());
    return out;
  }
  std::string args(const std::string& name, const std::string& extra) {
    return train_args(dir_, dir_ / name, kSteps, 4, "--json " + extra);
  }
  void expect_close(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << what << " step " << i + 1;
  }
  static constexpr int kSteps = 3;
  testing::TempDir dir_{"train_md"};
};

TEST_F(TrainMultidevice, ReplicasVirtualDevicesAndZeroGiveTheLossesOfOneReplica) {
  const std::vector<double> one = losses(run_plexus(args("one", "")));
  ASSERT_EQ(one.size(), static_cast<std::size_t>(kSteps));
  expect_close(losses(run_plexus(args("r2", "--replicas 2"))), one, "--replicas 2");
  const testing::ProcessResult vd = run_plexus(args("vd2", "--virtual-devices 2 --micro-batch 1"));
  expect_close(losses(vd), one, "--virtual-devices 2 --micro-batch 1");
  if (vd.exit_code == 0) {
    EXPECT_EQ(Json::parse(vd.out)["ranks"].size(), 2u);
  }
  expect_close(losses(run_plexus(args("z1", "--replicas 2 --zero 1"))), one, "--replicas 2 --zero 1");
  expect_close(losses(run_plexus(args("acc", "--micro-batch 2"))), one, "--micro-batch 2");
  // The thread count changes nothing, bit for bit.
  EXPECT_EQ(losses(run_plexus(args("t3", "--threads 3"))), one);
}

TEST_F(TrainMultidevice, MpirunRanksGiveTheLossesOfOneReplica) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed";
  const std::vector<double> one = losses(run_plexus(args("one", "")));
  ASSERT_EQ(one.size(), static_cast<std::size_t>(kSteps));
  const std::string mpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CUDA_VISIBLE_DEVICES= "
                             "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 300 mpirun -np 2 --oversubscribe " +
                             shell_quote(PLEXUS_BINARY) + " ";
  const testing::ProcessResult r = testing::run_command(mpirun + args("mpi", ""));
  expect_close(losses(r), one, "mpirun -np 2");
  if (r.exit_code == 0) {
    EXPECT_EQ(Json::parse(r.out)["ranks"].size(), 2u);
  }
  // --checkpoint-activations on every rank: the same losses bit for bit.
  const testing::ProcessResult ck = testing::run_command(mpirun + args("mpi-ckpt", "--checkpoint-activations"));
  EXPECT_EQ(losses(ck), losses(r)) << "mpirun -np 2 --checkpoint-activations";
  if (ck.exit_code == 0) {
    EXPECT_TRUE(Json::parse(ck.out)["checkpoint_activations"].get<bool>());
  }
  // --replicas is refused under mpirun, and bad input ends every rank with exit 2.
  const testing::ProcessResult bad = testing::run_command(mpirun + args("mpi-bad", "--replicas 2"));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("under mpirun every rank runs one replica"), std::string::npos) << bad.err;
  // A bad data line, seen by rank 0 alone: every rank ends with exit 2 naming the line, nothing written.
  std::ofstream(dir_ / "bad.jsonl") << "{\"ids\": [1, 2, 3]}\n{\"ids\": [1, 999, 3]}\n";
  const testing::ProcessResult line = testing::run_command(mpirun + train_args(dir_, dir_ / "mpi-line", kSteps, 4, "", dir_ / "bad.jsonl"));
  EXPECT_EQ(line.exit_code, 2) << line.err;
  EXPECT_NE(line.err.find(dir_ / "bad.jsonl" + ":2: token id 999"), std::string::npos) << line.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "mpi-line"));
}

}  // namespace
}  // namespace plexus
