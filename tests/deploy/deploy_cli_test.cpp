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

const std::string kCliData = std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/data";

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
  std::string model(const std::string& name = "llama-8b-config") const { return shell_quote(kCliData + "/" + name); }
  std::string inv(const std::string& name = "l4x4.json") const { return " --inventory " + shell_quote(kCliData + "/" + name); }

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
  expect_refused(model("llama-8b-hub") + " --target docker --api-type tgi --devices 0,1,2" + inv(), "--num-shard 3");
}

TEST_F(DeployCliBadInput, InventoryAndModelProblems) {
  expect_refused(model() + " --target docker --inventory " + shell_quote(dir_ / "missing.json"), "missing.json");
  std::ofstream(dir_ / "bad.json") << "{\"devices\": [{\"index\": 0, \"kind\": \"cuda\", \"name\": \"x\", \"memory_free_bytes\": \"a lot\"}], \"host\": {}}";
  before_ = entries(dir_.path());
  expect_refused(model() + " --target docker --inventory " + shell_quote(dir_ / "bad.json"), "memory_free_bytes");
  expect_refused(shell_quote(dir_ / "no-such-model") + " --target docker" + inv(), "no-such-model");
  // A ':' in the model's path cannot be mounted by docker -v / compose's volume syntax.
  fs::create_directory_symlink(kCliData + "/llama-8b-config", dir_ / "model:v2");
  before_ = entries(dir_.path());
  expect_refused(shell_quote(dir_ / "model:v2") + " --target compose" + inv(), "has a ':' in its path");
}

TEST_F(DeployCliBadInput, OutHoldingAUsersFile) {
  // Everything else is right: the plan fits and the files are generated, but --out holds a file
  // plexus deploy did not write.
  expect_refused(model() + " --target kubernetes --auto-select" + inv(), "not a directory plexus deploy wrote");
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

namespace plexus::deploy {
namespace {

// --out (issue 32, items 12 and 17): an existing directory is replaced only when it is empty or a
// previous deploy's; anything else exits 2 with a message naming --out and the reason (the entry
// at its top, never a file deep inside), and stays as it was.
class DeployCliOut : public ::testing::Test {
 protected:
  plexus::testing::ProcessResult deploy(const std::string& out) {
    return run_plexus("deploy " + shell_quote(kCliData + "/llama-8b-config") + " --target kubernetes --inventory " +
                      shell_quote(kCliData + "/h100x2.json") + " --out " + shell_quote(out));
  }
  void expect_refused(const std::string& out, const std::vector<std::string>& words) {
    const std::set<std::string> before = entries(dir_.path());
    const auto r = deploy(out);
    EXPECT_EQ(r.exit_code, 2) << out << "\n" << r.err;
    EXPECT_NE(r.err.find("--out " + out), std::string::npos) << r.err;
    for (const std::string& w : words) EXPECT_NE(r.err.find(w), std::string::npos) << w << "\n" << r.err;
    EXPECT_EQ(r.err.find("filesystem error"), std::string::npos) << r.err;
    EXPECT_EQ(entries(dir_.path()), before) << out;
  }
  TempDir dir_{"deploy_out"};
};

TEST_F(DeployCliOut, EmptySubdirectoriesAndLinksAreNotAnEarlierDeploy) {
  fs::create_directories(dir_ / "subdirs/a/b");
  expect_refused(dir_ / "subdirs", {"'a'", "is not empty"});

  fs::create_directories(dir_ / "data");
  std::ofstream(dir_ / "data/keep.txt") << "keep\n";
  fs::create_directories(dir_ / "holds-link");
  fs::create_directory_symlink(dir_ / "data", dir_ / "holds-link/link");
  expect_refused(dir_ / "holds-link", {"'link'"});
  EXPECT_EQ(read(dir_ / "holds-link/link/keep.txt"), "keep\n");

  fs::create_directories(dir_ / "empty");
  fs::create_directory_symlink(dir_ / "empty", dir_ / "is-link");
  expect_refused(dir_ / "is-link", {"symbolic link"});
  EXPECT_TRUE(fs::is_symlink(dir_ / "is-link"));

  // An earlier deploy's directory is replaced, but not once it holds an empty directory or a link.
  ASSERT_EQ(deploy(dir_ / "earlier").exit_code, 0);
  ASSERT_EQ(deploy(dir_ / "earlier").exit_code, 0);
  fs::create_directories(dir_ / "earlier/mine");
  expect_refused(dir_ / "earlier", {"the directory 'mine'"});
  fs::remove(dir_ / "earlier/mine");
  fs::create_symlink(dir_ / "data/keep.txt", dir_ / "earlier/notes");
  expect_refused(dir_ / "earlier", {"'notes'"});
  fs::remove(dir_ / "earlier/notes");
  EXPECT_EQ(deploy(dir_ / "earlier").exit_code, 0);

  // An empty directory is written, keeping its permissions.
  fs::permissions(dir_ / "empty", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::sticky_bit);
  fs::remove(dir_ / "is-link");
  ASSERT_EQ(deploy(dir_ / "empty").exit_code, 0);
  EXPECT_TRUE(fs::exists(dir_ / "empty/deployment.yaml"));
  EXPECT_EQ(fs::status(dir_ / "empty").permissions(),
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::sticky_bit);
}

// Replacing an earlier deploy where the new directory cannot be renamed into place and the old
// one cannot be put back either (rename() failing with EIO through an LD_PRELOAD library): exit 1
// with the first failure's reason, naming where the old files are; they are all there.
TEST_F(DeployCliOut, WhenTheOldFilesCannotGoBackTheErrorSaysWhereTheyAre) {
  const std::string out = dir_ / "earlier";
  ASSERT_EQ(deploy(out).exit_code, 0);
  const std::set<std::string> files = entries(out);
  const auto r = plexus::testing::run_command(
      "env CUDA_VISIBLE_DEVICES= LD_PRELOAD=" + shell_quote(RENAME_FAULT_LIBRARY) +
      " ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 " + shell_quote(PLEXUS_BINARY) + " deploy " +
      shell_quote(kCliData + "/llama-8b-config") + " --target kubernetes --inventory " + shell_quote(kCliData + "/h100x2.json") +
      " --out " + shell_quote(out));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot rename the new files into " + out + ": Input/output error"), std::string::npos) << r.err;
  std::string aside;
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".earlier.deploy-", 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, "-old") == 0) aside = e.path();
  }
  ASSERT_FALSE(aside.empty()) << "the old files are not set aside";
  EXPECT_NE(r.err.find("putting the old files back failed too (Input/output error): they are in " + aside), std::string::npos) << r.err;
  EXPECT_EQ(entries(aside), files);
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(DeployCliOut, ProcSelfAndBusyDirectoriesSayWhy) {
  const auto proc = deploy("/proc/self");
  EXPECT_EQ(proc.exit_code, 2) << proc.err;
  EXPECT_NE(proc.err.find("--out /proc/self is a symbolic link"), std::string::npos) << proc.err;
  // A directory holding other things: named by what its top holds, not by a file deep inside.
  fs::create_directories(dir_ / "busy/a/b/c");
  std::ofstream(dir_ / "busy/a/b/c/deep.txt") << "x";
  std::ofstream(dir_ / "busy/z.txt") << "x";
  expect_refused(dir_ / "busy", {"is not empty and is not a directory plexus deploy wrote", "2 entries", "'a'", "'z.txt'"});
  const auto busy = deploy(dir_ / "busy");
  EXPECT_EQ(busy.err.find("deep.txt"), std::string::npos) << busy.err;
  if (!fs::is_empty("/tmp")) {
    const auto tmp = deploy("/tmp");
    EXPECT_EQ(tmp.exit_code, 2) << tmp.err;
    EXPECT_NE(tmp.err.find("--out /tmp is not empty"), std::string::npos) << tmp.err;
  }
}

}  // namespace
}  // namespace plexus::deploy
