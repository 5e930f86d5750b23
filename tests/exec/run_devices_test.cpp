// make_run_devices: virtual CPU devices without a GPU, CUDA devices only for GPUs that exist.
#include <gtest/gtest.h>

#include "backend/cuda_availability.h"
#include "core/error.h"
#include "exec/run_devices.h"

namespace plexus {

namespace {
constexpr std::uint64_t kGiB = 1ull << 30;
}  // namespace

TEST(RunDevices, WithoutAGpuTheyStayOnTheCpu) {
  Budgets b;
  b.set(DeviceId::accelerator(0), kGiB);
  b.set(DeviceId::accelerator(1), kGiB);
  const DeviceRegistry cpu = make_run_devices(b, 2, kGiB);
  ASSERT_EQ(cpu.accelerator_count(), 2);
  EXPECT_EQ(cpu.accelerator(1).kind(), DeviceKind::kVirtual);
  EXPECT_EQ(cpu.accelerator(1).memory_total(), kGiB);

  // Budgets past the GPUs there are: the error names the CUDA devices that exist.
  RunAccelerators none;
  none.cuda = true;
  none.description = "no GPU";
  Budgets past;
  past.set(DeviceId::accelerator(0), kGiB);
  try {
    make_run_devices(past, 1, kGiB, none);
    FAIL() << "a budget past the GPUs accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("device 0 has a budget but no GPU"), std::string::npos) << e.what();
  }
  if (probe_cuda(CudaFreeMemory::kNone).usable()) return;
  // No GPU: a CUDA device cannot be made, and says which and why.
  RunAccelerators gpu0;
  gpu0.cuda = true;
  gpu0.physical_gpu = {0, 0};
  try {
    make_run_devices(b, 1, kGiB, gpu0);
    FAIL() << "a CUDA device made without a GPU";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
}

}  // namespace plexus
