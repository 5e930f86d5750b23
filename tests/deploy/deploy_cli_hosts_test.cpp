// `plexus deploy` on hosts without GPUs, as a newcomer meets them (real processes): --devices with
// no inventory on a machine without GPUs says what to add, and the README's command with the
// example inventory runs; `plexus detect --json` of a CPU-only machine (with and without virtual
// devices) is an inventory deploy takes, --auto-select included; a CPU plan that does not fit names
// deploy's ways out, not this machine's --max-memory / --offload-disk.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"

namespace plexus::deploy {
namespace {

namespace fs = std::filesystem;
using plexus::testing::ProcessResult;
using plexus::testing::run_command;
using plexus::testing::run_plexus;
using plexus::testing::shell_quote;
using plexus::testing::TempDir;

const std::string kHostsData = std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/data";

// plexus on a machine without GPUs: no CUDA device, no NVML, no ROCm SMI (also where the test
// machine has them), and `extra` environment (e.g. PLEXUS_VIRTUAL_DEVICES=2).
std::string no_gpu_plexus(const std::string& extra = "") {
  return "env -u PLEXUS_VIRTUAL_DEVICES -u PLEXUS_VIRTUAL_GPUS CUDA_VISIBLE_DEVICES= "
         "PLEXUS_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 PLEXUS_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so " +
         extra + " " + shell_quote(PLEXUS_BINARY);
}

class DeployCliHosts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("deploy_hosts");
    const ProcessResult r = run_plexus("make-model " + shell_quote(*dir_ / "chat") + " --preset tiny --tokenizer " +
                                       shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string model() { return shell_quote(*dir_ / "chat"); }
  static TempDir* dir_;
};

TempDir* DeployCliHosts::dir_ = nullptr;

// README: `plexus deploy models/chat --target docker --api-type vllm --devices 0,1 --dry-run`
// without an inventory, on a machine without GPUs: exit 2 saying what to add; with the example
// inventory it runs as the README prints it.
TEST_F(DeployCliHosts, DevicesWithoutAnInventorySayWhatToAdd) {
  const std::string args = " deploy " + model() + " --target docker --api-type vllm --devices 0,1 --dry-run";
  const ProcessResult r = run_command(no_gpu_plexus() + args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--devices 0,1: this machine has no GPU. Without --inventory, deploy takes the devices from `plexus detect` here"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("add --inventory FILE with what `plexus detect --json` printed on the GPU host (examples/gpu-host.json"),
            std::string::npos)
      << r.err;
  // Virtual CPU devices are named as what they are.
  const ProcessResult v = run_command(no_gpu_plexus("PLEXUS_VIRTUAL_DEVICES=2") + args);
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("its devices 0,1 are virtual CPU devices"), std::string::npos) << v.err;
  const ProcessResult ok =
      run_command(no_gpu_plexus() + args + " --inventory " + shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/examples/gpu-host.json"));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("devices: GPUs 0,1 as --devices named them"), std::string::npos) << ok.err;
  EXPECT_NE(ok.out.find("--tensor-parallel-size 2"), std::string::npos);
}

// `plexus detect --json` on a machine without GPUs (plain, and with PLEXUS_VIRTUAL_DEVICES=2)
// gives an inventory deploy takes: a CPU deployment, also with --auto-select; --devices on it says
// what it lacks; an empty file (detect failed) says so.
TEST_F(DeployCliHosts, CpuOnlyDetectIsAnInventoryDeployTakes) {
  for (const std::string env : {"", "PLEXUS_VIRTUAL_DEVICES=2"}) {
    SCOPED_TRACE(env);
    const ProcessResult detect = run_command(no_gpu_plexus(env) + " detect --json");
    ASSERT_EQ(detect.exit_code, 0) << detect.err;
    const std::string inv = *dir_ / "cpu-inventory.json";
    std::ofstream(inv) << detect.out;
    const std::string deploy = no_gpu_plexus() + " deploy " + model() + " --inventory " + shell_quote(inv) + " --dry-run ";
    const ProcessResult plain = run_command(deploy + "--target kubernetes");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_NE(plain.err.find("devices: no GPU in the inventory"), std::string::npos) << plain.err;
    const ProcessResult autosel = run_command(deploy + "--target kubernetes --auto-select");
    ASSERT_EQ(autosel.exit_code, 0) << autosel.err;
    EXPECT_NE(autosel.err.find("devices: --auto-select: no GPU in the inventory to pick from"), std::string::npos) << autosel.err;
    EXPECT_NE(autosel.err.find("the deployment computes on the host's CPUs"), std::string::npos) << autosel.err;
    EXPECT_EQ(autosel.out, plain.out);
    EXPECT_EQ(autosel.out.find("nvidia.com/gpu"), std::string::npos);
    const ProcessResult named = run_command(deploy + "--target docker --devices 0");
    EXPECT_EQ(named.exit_code, 2);
    EXPECT_NE(named.err.find("--devices 0: --inventory " + inv + " lists no GPU"), std::string::npos) << named.err;
    EXPECT_NE(named.err.find("add --inventory FILE with what `plexus detect --json` printed on the GPU host"), std::string::npos);
    if (!env.empty()) {
      EXPECT_NE(named.err.find("virtual CPU devices"), std::string::npos) << named.err;
    }
  }
  std::ofstream(*dir_ / "empty.json").flush();
  const ProcessResult empty = run_command(no_gpu_plexus() + " deploy " + model() + " --target docker --inventory " +
                                          shell_quote(*dir_ / "empty.json") + " --dry-run");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("is empty: it holds what `plexus detect --json > FILE` printed"), std::string::npos) << empty.err;
}

// A CPU deployment that does not fit: deploy's ways out, not --max-memory / --offload-disk (which
// deploy refuses) nor --batch.
TEST_F(DeployCliHosts, CpuPlanThatDoesNotFitNamesWhatDeployAccepts) {
  const std::string inv = " --inventory " + shell_quote(kHostsData + "/cpu_only.json");
  for (const std::string& args : {shell_quote(kHostsData + "/llama-70b-config") + " --target docker" + inv,
                                 shell_quote(kHostsData + "/llama-8b-config") + " --target kubernetes --context 131072 --max-sequences 64" + inv}) {
    const ProcessResult r = run_plexus("deploy " + args + " --dry-run");
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find("the plan does not fit the host's 60.0 GiB of available memory"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("deploy to a host with more memory or with GPUs (--inventory of it), lower --context or --max-sequences"),
              std::string::npos)
        << r.err;
    for (const std::string refused : {"--max-memory", "--offload-disk", "--batch", "--dtype int8"}) {
      EXPECT_EQ(r.err.find(refused), std::string::npos) << refused << " in: " << r.err;
    }
  }
}

}  // namespace
}  // namespace plexus::deploy
