// Which collective a tensor-parallel group on CUDA GPUs takes (no GPU needed): shared GPU ->
// CUDA in-process, a GPU per rank -> NCCL when usable, PLEXUS_TP_COLLECTIVE checked.
#include <gtest/gtest.h>

#include <vector>

#include "comm/gpu_collective_choice.h"
#include "core/error.h"

namespace plexus {
namespace {

TEST(GpuCollectiveChoice, RanksSharingOneGpuSumInProcess) {
  const std::vector<int> gpus{0, 0};
  const GpuCollectiveChoice c = choose_gpu_collective(gpus, "", "");
  EXPECT_EQ(c.kind, GpuCollective::kCudaInProcess);
  EXPECT_NE(c.reason.find("share GPU 0"), std::string::npos) << c.reason;
  EXPECT_STREQ(gpu_collective_name(c.kind), "cuda in-process");
}

TEST(GpuCollectiveChoice, AGpuPerRankUsesNcclWhenItLoads) {
  const std::vector<int> gpus{0, 1, 2, 3};
  EXPECT_EQ(choose_gpu_collective(gpus, "", "").kind, GpuCollective::kNccl);
  const GpuCollectiveChoice without = choose_gpu_collective(gpus, "libnccl.so.2: cannot open shared object file", "");
  EXPECT_EQ(without.kind, GpuCollective::kCudaInProcess);
  EXPECT_NE(without.reason.find("libnccl.so.2"), std::string::npos) << without.reason;
  EXPECT_STREQ(gpu_collective_name(GpuCollective::kNccl), "nccl");
}

TEST(GpuCollectiveChoice, SomeRanksSharingAGpuSumInProcess) {
  const std::vector<int> gpus{0, 0, 1, 1};
  EXPECT_EQ(choose_gpu_collective(gpus, "", "").kind, GpuCollective::kCudaInProcess);
}

TEST(GpuCollectiveChoice, TheEnvironmentForcesOneAndIsChecked) {
  const std::vector<int> distinct{0, 1};
  const std::vector<int> shared{0, 0};
  EXPECT_EQ(choose_gpu_collective(distinct, "", "cuda").kind, GpuCollective::kCudaInProcess);
  EXPECT_EQ(choose_gpu_collective(distinct, "", "nccl").kind, GpuCollective::kNccl);
  EXPECT_THROW(choose_gpu_collective(shared, "", "nccl"), InputError);
  EXPECT_THROW(choose_gpu_collective(distinct, "built without NCCL", "nccl"), InputError);
  try {
    choose_gpu_collective(distinct, "", "mpi");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("PLEXUS_TP_COLLECTIVE=mpi"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace plexus
