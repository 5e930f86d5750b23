// GPU flags where the CUDA runtime sees no GPU (every development machine; run_no_gpu hides a real
// one with CUDA_VISIBLE_DEVICES=): virtual GPUs and GPU ordinals are refused with exit 2 naming
// why and what exists; detect and doctor say why CUDA is unusable.
#include <gtest/gtest.h>

#include "cli_run.h"
#include "core/json.h"

namespace plexus {
namespace {

using testing::expect_usage_error;
using testing::run_no_gpu;
using testing::shell_quote;
using testing::TempDir;

class GpuFlagsWithoutGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const testing::ProcessResult detect = run_no_gpu("detect --json");
    ASSERT_EQ(detect.exit_code, 0) << detect.err;
    cuda_status_ = Json::parse(detect.out)["sources"]["cuda"].get<std::string>();
    if (cuda_status_.rfind("unavailable", 0) != 0) GTEST_SKIP() << "the CUDA runtime sees a GPU here: " << cuda_status_;
    model_ = shell_quote(testing::tiny_model(dir_));
  }
  std::string cuda_status_;
  TempDir dir_{"gpu_flags"};
  std::string model_;
};

TEST_F(GpuFlagsWithoutGpu, VirtualGpusExitTwoSayingWhy) {
  const std::string why = cuda_status_.substr(std::string("unavailable: ").size(), 20);  // "no CUDA driver (...", "built without CUDA"
  for (const std::string& c : {"generate " + model_ + " --ids 1 --virtual-gpus 2", "perplexity " + model_ + " --ids 1,2 --virtual-gpus 2",
                               "plan " + model_ + " --virtual-gpus 2", std::string("detect --virtual-gpus 2"), std::string("doctor --virtual-gpus 2")}) {
    expect_usage_error(run_no_gpu(c), c, {"--virtual-gpus 2", why, "The devices that exist: cpu", "--virtual-devices 2"});
  }
  // The environment variable, as the flag.
  const testing::ProcessResult env = testing::run_command(
      "env PLEXUS_VIRTUAL_GPUS=3 CUDA_VISIBLE_DEVICES= PLEXUS_NVML_LIBRARY=/nonexistent PLEXUS_ROCM_SMI_LIBRARY=/nonexistent " +
      shell_quote(PLEXUS_BINARY) + " generate " + model_ + " --ids 1");
  expect_usage_error(env, "PLEXUS_VIRTUAL_GPUS=3", {"--virtual-gpus 3", why});
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --virtual-gpus 0"), "--virtual-gpus 0", {"--virtual-gpus", "at least 1"});
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --virtual-gpus 2 --virtual-devices 2"), "both",
                     {"--virtual-devices", "--virtual-gpus", "one of them"});
}

TEST_F(GpuFlagsWithoutGpu, GpuOrdinalsNameTheDevicesThatExist) {
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --devices 0"), "--devices 0",
                     {"device 0 does not exist", "the devices that exist: cpu only", "CUDA unavailable", "--virtual-devices N"});
  // Virtual devices still make the ordinals exist, and --max-memory still rehearses on the CPU.
  EXPECT_EQ(run_no_gpu("generate " + model_ + " --ids 1 --max-tokens 1 --virtual-devices 2 --devices 1").exit_code, 0);
  EXPECT_EQ(run_no_gpu("generate " + model_ + " --ids 1 --max-tokens 1 --max-memory 0=1GiB,1=1GiB").exit_code, 0);
}

TEST_F(GpuFlagsWithoutGpu, DetectAndDoctorSayWhyCudaIsUnusable) {
  const testing::ProcessResult detect = run_no_gpu("detect");
  EXPECT_EQ(detect.exit_code, 0);
  EXPECT_NE(detect.out.find("CUDA " + cuda_status_), std::string::npos) << detect.out;
  const testing::ProcessResult doctor = run_no_gpu("doctor");
  EXPECT_EQ(doctor.exit_code, 1);
  const std::string line = "note: CUDA unusable: " + cuda_status_.substr(std::string("unavailable: ").size()) + "\n";
  EXPECT_NE(doctor.out.find(line), std::string::npos) << doctor.out;
  const testing::ProcessResult json = run_no_gpu("doctor --json");
  bool noted = false;
  const Json report = Json::parse(json.out);
  for (const Json& n : report["notes"]) noted = noted || n.get<std::string>().rfind("CUDA unusable: ", 0) == 0;
  EXPECT_TRUE(noted) << json.out;
}

// Nobody asked for a GPU: a CPU run says nothing about CUDA, whether CUDA_VISIBLE_DEVICES is empty
// or unset (detect and doctor say why CUDA is unusable; GPU flags name it in their error).
TEST_F(GpuFlagsWithoutGpu, ACpuRunSaysNothingOfCudaUnlessAGpuWasAskedFor) {
  for (const std::string& c : {"generate " + model_ + " --ids 1 --max-tokens 1", "perplexity " + model_ + " --ids 1,2",
                               "generate " + model_ + " --ids 1 --max-tokens 1 --virtual-devices 2", "plan " + model_}) {
    const testing::ProcessResult hidden = run_no_gpu(c);
    EXPECT_EQ(hidden.exit_code, 0) << c << "\n" << hidden.err;
    EXPECT_EQ(hidden.err.find("CUDA unavailable"), std::string::npos) << c << "\n" << hidden.err;
    EXPECT_EQ(hidden.err.find("NVIDIA driver"), std::string::npos) << c << "\n" << hidden.err;
    if (cuda_status_.rfind("unavailable: no CUDA driver", 0) == 0) {  // no driver at all: the same without the variable
      const testing::ProcessResult unset = testing::run_command(
          "env -u CUDA_VISIBLE_DEVICES -u PLEXUS_VIRTUAL_DEVICES -u PLEXUS_VIRTUAL_GPUS PLEXUS_NVML_LIBRARY=/nonexistent "
          "PLEXUS_ROCM_SMI_LIBRARY=/nonexistent " + shell_quote(PLEXUS_BINARY) + " " + c);
      EXPECT_EQ(unset.exit_code, 0) << c << "\n" << unset.err;
      EXPECT_EQ(unset.err.find("CUDA unavailable"), std::string::npos) << c << "\n" << unset.err;
    }
  }
}

TEST_F(GpuFlagsWithoutGpu, FlagsAreDeclaredOnEveryCommandWithVirtualDevices) {
  for (const std::string c : {"detect", "doctor", "plan", "generate", "perplexity", "batch"}) {
    const testing::ProcessResult help = run_no_gpu(c + " --help");
    EXPECT_NE(help.out.find("--virtual-gpus"), std::string::npos) << c;
    EXPECT_NE(help.out.find("PLEXUS_VIRTUAL_GPUS"), std::string::npos) << c;
  }
}

}  // namespace
}  // namespace plexus
