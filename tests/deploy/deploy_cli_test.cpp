// `plexus deploy` as a user runs it (real processes): every bad input exits 2 naming the flag and
// leaves --out as it was (no temporary directory beside it); write_deployment replaces an earlier
// deploy's directory and refuses one with a user's file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/error.h"
#include "deploy/deployment.h"
#include "test_util.h"

namespace plexus::deploy {
namespace {

namespace fs = std::filesystem;
using plexus::testing::run_plexus;
using plexus::testing::shell_quote;
using plexus::testing::TempDir;

const std::string kData = std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/data";

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.insert(fs::relative(e.path(), dir).string());
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A deploy directory the user already has, with a file of their own in it.
class DeployCliBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(out_);
    std::ofstream(out_ + "/notes.txt") << "mine\n";
    before_ = entries(dir_.path());
  }
  // Runs deploy with ARGS (the 8B config on the 4 × L4 inventory unless ARGS names others),
  // expects exit 2 with `flag` in the message, and the directory unchanged.
  void expect_refused(const std::string& args, const std::string& flag) {
    const auto r = run_plexus("deploy " + args + " --out " + shell_quote(out_));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(entries(dir_.path()), before_) << args;
    EXPECT_EQ(read(out_ + "/notes.txt"), "mine\n");
  }
  std::string model(const std::string& name = "llama-8b-config") const { return shell_quote(kData + "/" + name); }
  std::string inv(const std::string& name = "l4x4.json") const { return " --inventory " + shell_quote(kData + "/" + name); }

  TempDir dir_{"deploy_cli"};
  std::string out_ = dir_ / "deploy-out";
  std::set<std::string> before_;
};

TEST_F(DeployCliBadInput, UnknownTargetAndApiType) {
  expect_refused(model() + " --target nomad" + inv(), "--target nomad");
  expect_refused(model() + inv(), "--target is required");
  expect_refused(model() + " --target docker --api-type triton" + inv(), "--api-type triton");
}

TEST_F(DeployCliBadInput, DevicesThatDoNotExist) {
  expect_refused(model() + " --target docker --devices 0,9" + inv(), "GPU 9 does not exist");
  expect_refused(model() + " --target docker --devices 0 --auto-select" + inv(), "--devices and --auto-select");
}

TEST_F(DeployCliBadInput, PlanThatDoesNotFit) {
  expect_refused(model("llama-70b-config") + " --target docker --auto-select" + inv(), "--auto-select: the plan does not fit");
  expect_refused(model() + " --target docker --devices 2" + inv(), "the plan does not fit GPU 2");
  expect_refused(model() + " --target kubernetes --max-sequences 64 --context 131072" + inv("cpu_only.json"), "--max-sequences");
}

TEST_F(DeployCliBadInput, PortEnvAndNodes) {
  expect_refused(model() + " --target docker --port 0" + inv(), "--port");
  expect_refused(model() + " --target docker --port 65536" + inv(), "--port");
  expect_refused(model() + " --target compose --env NOEQUALS" + inv(), "--env NOEQUALS");
  expect_refused(model() + " --target compose --env 9X=1" + inv(), "'9X'");
  expect_refused(model() + " --target docker --nodes 2" + inv(), "--nodes 2");
  expect_refused(model() + " --target slurm --gpus-per-node 3" + inv("h100x2.json"), "--gpus-per-node 3");
}

TEST_F(DeployCliBadInput, FlagsOfThisMachineAndServesBatch) {
  expect_refused(model() + " --target docker --batch 0" + inv(), "--max-sequences");  // --batch: its old spelling
  expect_refused(model() + " --target docker --max-memory 0=10GiB" + inv(), "--max-memory");
  expect_refused(model() + " --target docker --virtual-devices 2" + inv(), "--virtual-devices");
  expect_refused(model() + " --target docker --strategy fastest" + inv(), "--strategy fastest");
}

TEST_F(DeployCliBadInput, EngineAndModelMismatch) {
  expect_refused(model() + " --target docker --api-type tei" + inv(), "--api-type tei serves embedding models");
  expect_refused(model("bert-config") + " --target docker" + inv(), "use --api-type tei");
  expect_refused(model() + " --target docker --api-type tgi --devices 0,1,2" + inv(), "--num-shard 3");
}

TEST_F(DeployCliBadInput, InventoryAndModelProblems) {
  expect_refused(model() + " --target docker --inventory " + shell_quote(dir_ / "missing.json"), "missing.json");
  std::ofstream(dir_ / "bad.json") << "{\"devices\": [{\"index\": 0, \"kind\": \"cuda\", \"name\": \"x\", \"memory_free_bytes\": \"a lot\"}], \"host\": {}}";
  before_ = entries(dir_.path());
  expect_refused(model() + " --target docker --inventory " + shell_quote(dir_ / "bad.json"), "memory_free_bytes");
  expect_refused(shell_quote(dir_ / "no-such-model") + " --target docker" + inv(), "no-such-model");
  // A ':' in the model's path cannot be mounted by docker -v / compose's volume syntax.
  fs::create_directory_symlink(kData + "/llama-8b-config", dir_ / "model:v2");
  before_ = entries(dir_.path());
  expect_refused(shell_quote(dir_ / "model:v2") + " --target compose" + inv(), "has a ':' in its path");
}

TEST_F(DeployCliBadInput, OutHoldingAUsersFile) {
  // Everything else is right: the plan fits and the files are generated, but --out holds a file
  // plexus deploy did not write.
  expect_refused(model() + " --target kubernetes --auto-select" + inv(), "notes.txt, which plexus deploy did not write");
}

TEST(DeployCli, HelpDescribesTheTargets) {
  const auto r = run_plexus("deploy --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--target", "--auto-select", "--inventory", "--api-type", "--max-sequences", "kubernetes", "docs/deploy.md"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

TEST(WriteDeployment, ReplacesAnEarlierDeployAndRefusesForeignFiles) {
  TempDir dir("deploy_write");
  const std::string out = dir / "deploy-docker";
  write_deployment({{"Dockerfile", "FROM a\n", false}, {"run.sh", "#!/bin/sh\n", true}}, out);
  EXPECT_EQ(read(out + "/Dockerfile"), "FROM a\n");
  EXPECT_TRUE((fs::status(out + "/run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  // A second deploy replaces the first one's files (a file it no longer writes goes too).
  write_deployment({{"Dockerfile", "FROM b\n", false}, {"sub/x.yaml", "a: 1\n", false}}, out);
  EXPECT_EQ(read(out + "/Dockerfile"), "FROM b\n");
  EXPECT_TRUE(fs::exists(out + "/sub/x.yaml"));
  EXPECT_FALSE(fs::exists(out + "/run.sh"));
  // A file the user put there: refused, nothing changed, nothing left beside it.
  std::ofstream(out + "/mine.txt") << "keep\n";
  const std::set<std::string> before = entries(dir.path());
  EXPECT_THROW(write_deployment({{"Dockerfile", "FROM c\n", false}}, out), InputError);
  EXPECT_EQ(entries(dir.path()), before);
  EXPECT_EQ(read(out + "/Dockerfile"), "FROM b\n");
  // A file where the directory should be.
  std::ofstream(dir / "plain") << "x";
  EXPECT_THROW(write_deployment({{"a", "b", false}}, dir / "plain"), InputError);
}

}  // namespace
}  // namespace plexus::deploy
