// `plexus deploy MODEL --target T --inventory <2 × H100> --dry-run` end to end, on a model made by
// make-model, compared with tests/deploy/golden/cli-<T>/dry-run.txt (the model's temporary
// directory printed as /srv/models), so the files the CLI prints are reviewed; and the same
// deployment written to --out: the files --dry-run printed, replaced by a second deploy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "golden_files.h"
#include "test_util.h"

namespace plexus::deploy {
namespace {

namespace fs = std::filesystem;
using plexus::testing::ProcessResult;
using plexus::testing::run_command;
using plexus::testing::run_plexus;
using plexus::testing::shell_quote;
using plexus::testing::TempDir;

const std::string kInventory = std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/data/h100x2.json";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

class DeployCliGolden : public ::testing::TestWithParam<std::pair<std::string, std::string>> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("deploy_golden");
    const ProcessResult r = run_plexus("make-model " + shell_quote(*dir_ / "tiny-llama") + " --preset tiny --tokenizer " +
                                       shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  // deploy run in the model's parent directory with the model given relatively.
  static ProcessResult deploy(const std::string& args) {
    return run_command("cd " + shell_quote(dir_->path()) + " && env CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) +
                       " deploy tiny-llama --inventory " + shell_quote(kInventory) + " " + args);
  }
  static TempDir* dir_;
};

TempDir* DeployCliGolden::dir_ = nullptr;

TEST_P(DeployCliGolden, DryRunMatchesGolden) {
  const auto& [target, extra] = GetParam();
  const ProcessResult r = deploy("--target " + target + " " + extra + " --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("devices: GPUs 0,1: every GPU of the inventory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("plan: "), std::string::npos) << r.err;
  const std::string text = replace_all(r.out, dir_->path(), "/srv/models");
  EXPECT_EQ(text.find(dir_->path()), std::string::npos);
  const std::string name = "cli-" + target + (extra.empty() ? "" : "-" + extra.substr(extra.rfind(' ') + 1));
  testing::expect_golden({{"dry-run.txt", text, false}}, name);
  if (target == "docker") {
    EXPECT_NE(r.out.find("==> docker run <==\ndocker run "), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(dir_->path() + "/deploy-" + target));  // --dry-run writes nothing
}

TEST_P(DeployCliGolden, WritesWhatDryRunPrints) {
  const auto& [target, extra] = GetParam();
  const std::string out = *dir_ / ("out-" + target + (extra.empty() ? "" : "-x"));
  const ProcessResult dry = deploy("--target " + target + " " + extra + " --dry-run");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  for (int round = 0; round < 2; ++round) {  // the second replaces the first
    const ProcessResult r = deploy("--target " + target + " " + extra + " --out " + shell_quote(out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("wrote " + out), std::string::npos) << r.out;
  }
  // Every file printed by --dry-run is on disk with the same content (dry_run_text puts a blank
  // line between files and ends each with a newline).
  std::vector<std::pair<std::string, std::string>> blocks;
  std::istringstream in(dry.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("==> ", 0) == 0 && line.size() > 8 && line.compare(line.size() - 4, 4, " <==") == 0) {
      if (!blocks.empty()) blocks.back().second.pop_back();  // the blank line before this header
      blocks.emplace_back(line.substr(4, line.size() - 8), "");
    } else if (!blocks.empty()) {
      blocks.back().second += line + "\n";
    }
  }
  int files = 0;
  for (const auto& [path, printed] : blocks) {
    if (path == "docker run") continue;
    ++files;
    std::ifstream f(out + "/" + path);
    ASSERT_TRUE(f.good()) << path;
    std::stringstream got;
    got << f.rdbuf();
    std::string written = got.str();
    if (!written.empty() && written.back() != '\n') written += '\n';
    EXPECT_EQ(written, printed) << path;
  }
  EXPECT_GT(files, 0);
}

INSTANTIATE_TEST_SUITE_P(Targets, DeployCliGolden,
                         ::testing::Values(std::pair<std::string, std::string>{"docker", ""},
                                           std::pair<std::string, std::string>{"compose", ""},
                                           std::pair<std::string, std::string>{"kubernetes", ""},
                                           std::pair<std::string, std::string>{"slurm", ""},
                                           std::pair<std::string, std::string>{"docker", "--api-type vllm"},
                                           std::pair<std::string, std::string>{"kubernetes", "--api-type tgi"}),
                         [](const auto& info) {
                           return info.param.first + (info.param.second.empty() ? "" : "_" + info.param.second.substr(info.param.second.rfind(' ') + 1));
                         });

}  // namespace
}  // namespace plexus::deploy

namespace plexus::deploy {
namespace {

// Without --inventory, deploy detects this machine's devices (here 4 fake H100s through the fake
// NVML); `plexus detect --json` saved to a file and given as --inventory gives the same deployment.
TEST(DeployCliDetect, DetectHereEqualsItsInventoryFile) {
  TempDir dir("deploy_detect");
  ASSERT_EQ(run_plexus("make-model " + shell_quote(dir / "m") + " --preset tiny --tokenizer " +
                       shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral"))
                .exit_code,
            0);
  const std::string env = "env -u PLEXUS_VIRTUAL_DEVICES -u PLEXUS_VIRTUAL_GPUS CUDA_VISIBLE_DEVICES= PLEXUS_NVML_LIBRARY=" +
                          shell_quote(FAKE_NVML_LIBRARY) + " PLEXUS_FAKE_NVML_SCRIPT=" +
                          shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/backend/data/four_gpus.json") +
                          " PLEXUS_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so " + shell_quote(PLEXUS_BINARY);
  const ProcessResult detect = run_command(env + " detect --json");
  ASSERT_EQ(detect.exit_code, 0) << detect.err;
  std::ofstream(dir / "inv.json") << detect.out;
  const std::string deploy = " deploy " + shell_quote(dir / "m") + " --target kubernetes --dry-run";
  const ProcessResult here = run_command(env + deploy);
  const ProcessResult file = run_command(env + deploy + " --inventory " + shell_quote(dir / "inv.json"));
  ASSERT_EQ(here.exit_code, 0) << here.err;
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_NE(here.err.find("devices: GPUs 0,1,2,3"), std::string::npos) << here.err;
  EXPECT_NE(here.out.find("nvidia.com/gpu: \"4\""), std::string::npos);
  EXPECT_EQ(here.out, file.out);
  EXPECT_EQ(here.err, file.err);
  // GPU 3 of that script has 0.5 GiB of 80 free: vLLM (which wants its fraction free at start)
  // cannot run there; --auto-select takes the GPU with the most free memory.
  const ProcessResult vllm = run_command(env + deploy + " --api-type vllm");
  EXPECT_EQ(vllm.exit_code, 2);
  EXPECT_NE(vllm.err.find("GPU 3 has only 0.5 GiB of its 80.0 GiB free"), std::string::npos) << vllm.err;
  const ProcessResult picked = run_command(env + deploy + " --api-type vllm --auto-select");
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_NE(picked.err.find("devices: GPU 0: "), std::string::npos) << picked.err;
}

}  // namespace
}  // namespace plexus::deploy
