// The CUDA availability answer, virtual GPUs and the --virtual-gpus / PLEXUS_VIRTUAL_GPUS parsing,
// on hand-built answers (no GPU needed), plus what this machine's runtime says.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/cuda_availability.h"
#include "backend/detect.h"
#include "backend/device_options.h"
#include "backend/doctor.h"
#include "core/args.h"
#include "core/error.h"

namespace plexus {

namespace {
constexpr std::uint64_t kGpuMemoryUnit = 1ull << 30;

CudaAvailability two_gpu_answer() {
  CudaAvailability a;
  a.why = CudaUnavailable::kNone;
  a.runtime_version = 13000;
  a.driver_version = 13020;
  for (int i = 0; i < 2; ++i) {
    CudaGpu g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.pci_bus_id = i == 0 ? "0000:18:00.0" : "0000:2a:00.0";
    g.uuid = "GPU-aaaa-" + std::to_string(i);
    g.memory_total_bytes = 80 * kGpuMemoryUnit;
    g.memory_free_bytes = 78 * kGpuMemoryUnit;
    g.cc_major = 9;
    a.gpus.push_back(g);
  }
  a.peer = {{false, true}, {true, false}};
  return a;
}

CudaAvailability no_driver() {
  CudaAvailability a;
  a.why = CudaUnavailable::kNoDriver;
  a.runtime_version = 13000;
  a.reason = describe_cuda_unavailable(a.why, "cudaErrorInsufficientDriver", 0, 13000);
  return a;
}

// Parses `argv` with the device options declared, PLEXUS_VIRTUAL_* taken from `env`.
DeviceOptions parse(std::vector<std::string> argv, const char* gpus_env = nullptr, const char* devices_env = nullptr) {
  if (gpus_env) ::setenv("PLEXUS_VIRTUAL_GPUS", gpus_env, 1);
  else ::unsetenv("PLEXUS_VIRTUAL_GPUS");
  if (devices_env) ::setenv("PLEXUS_VIRTUAL_DEVICES", devices_env, 1);
  else ::unsetenv("PLEXUS_VIRTUAL_DEVICES");
  Args args("detect", "");
  add_device_options(args);
  args.parse(argv);
  try {
    DeviceOptions o = device_options_from(args);
    ::unsetenv("PLEXUS_VIRTUAL_GPUS");
    ::unsetenv("PLEXUS_VIRTUAL_DEVICES");
    return o;
  } catch (...) {
    ::unsetenv("PLEXUS_VIRTUAL_GPUS");
    ::unsetenv("PLEXUS_VIRTUAL_DEVICES");
    throw;
  }
}

std::string input_error(std::vector<std::string> argv, const char* gpus_env = nullptr, const char* devices_env = nullptr) {
  try {
    parse(std::move(argv), gpus_env, devices_env);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}
}  // namespace

TEST(CudaAvailability, ReasonsSayWhyInOneLine) {
  EXPECT_EQ(cuda_version_text(13020), "13.2");
  EXPECT_EQ(cuda_version_text(0), "none");
  const std::string none = describe_cuda_unavailable(CudaUnavailable::kNoDriver, "x", 0, 13000);
  EXPECT_NE(none.find("no CUDA driver"), std::string::npos) << none;
  const std::string old = describe_cuda_unavailable(CudaUnavailable::kDriverTooOld, "", 12020, 13000);
  EXPECT_NE(old.find("supports CUDA 12.2, older than plexus's CUDA runtime 13.0"), std::string::npos) << old;
  EXPECT_NE(describe_cuda_unavailable(CudaUnavailable::kBuiltWithoutCuda, "", 0, 0).find("built without CUDA"), std::string::npos);
  EXPECT_NE(describe_cuda_unavailable(CudaUnavailable::kNoDevice, "", 13000, 13000).find("sees no GPU"), std::string::npos);
  for (const CudaAvailability& a : {no_driver(), two_gpu_answer()}) EXPECT_EQ(a.status().find('\n'), std::string::npos);
  EXPECT_EQ(no_driver().status().rfind("unavailable: no CUDA driver", 0), 0u) << no_driver().status();
  EXPECT_EQ(two_gpu_answer().status(), "ok: CUDA runtime 13.0, driver supports CUDA 13.2, 2 GPU(s)");
}

TEST(CudaAvailability, ThisMachineAnswersWithGpusOrAReason) {
  const CudaAvailability a = probe_cuda();
  if (a.usable()) {
    EXPECT_TRUE(a.reason.empty());
    EXPECT_EQ(a.peer.size(), a.gpus.size());
    EXPECT_GT(a.gpus[0].memory_total_bytes, 0u);
    EXPECT_TRUE(a.gpus[0].memory_free_bytes.has_value());
  } else {
    EXPECT_FALSE(a.reason.empty());
    EXPECT_TRUE(a.gpus.empty());
    EXPECT_EQ(a.status(), "unavailable: " + a.reason);
#ifndef PLEXUS_HAVE_CUDA
    EXPECT_EQ(a.why, CudaUnavailable::kBuiltWithoutCuda);
#endif
  }
}

TEST(CudaAvailability, VirtualGpusSplitGpuZero) {
  HostInfo host;
  const Inventory inv = virtual_gpus_inventory(4, two_gpu_answer(), host);
  ASSERT_EQ(inv.devices.size(), 4u);
  EXPECT_EQ(inv.virtual_gpus, 4);
  for (const DeviceInfo& d : inv.devices) {
    EXPECT_EQ(d.kind, DeviceKind::kCuda);
    EXPECT_EQ(d.memory_total_bytes.value_or(0), 78 * kGpuMemoryUnit / 4);
    EXPECT_EQ(d.virtual_on_gpu.value_or(-1), 0);
    EXPECT_NE(d.name.find("virtual, on GPU 0"), std::string::npos);
  }
  EXPECT_EQ(inv.devices[3].cuda_device.value_or(""), "cuda:3");
  EXPECT_EQ(inv.topology[0][1], "VGPU");
  const DoctorReport r = run_doctor(inv, {0, 1, 2, 3});
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.plan_flags.rfind("--virtual-gpus 4 --devices 0,1,2,3 --max-memory", 0), 0u) << r.plan_flags;
  bool cuda_note = false;
  for (const std::string& n : r.notes) cuda_note = cuda_note || n.rfind("CUDA usable", 0) == 0;
  EXPECT_TRUE(cuda_note);
}

TEST(CudaAvailability, VirtualGpusWithoutAGpuSayWhy) {
  try {
    virtual_gpus_inventory(2, no_driver(), HostInfo());
    FAIL() << "virtual GPUs without a GPU accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--virtual-gpus 2"), std::string::npos) << what;
    EXPECT_NE(what.find("no CUDA driver"), std::string::npos) << what;
    EXPECT_NE(what.find("The devices that exist: cpu"), std::string::npos) << what;
    EXPECT_NE(what.find("--virtual-devices 2"), std::string::npos) << what;
  }
}

TEST(CudaAvailability, MergeNamesNvmlGpusAndAddsTheOnesItMissed) {
  // NVML saw GPU 0 only (bus id in its 8-digit-domain, upper-case spelling).
  Inventory inv;
  DeviceInfo d;
  d.index = 0;
  d.kind = DeviceKind::kCuda;
  d.name = "NVIDIA H100 80GB HBM3";
  d.pci_bus_id = "00000000:18:00.0";
  inv.devices.push_back(d);
  inv.topology = square_matrix(1, "?");
  inv.p2p = square_matrix(1, "?");
  merge_cuda(inv, two_gpu_answer());
  ASSERT_EQ(inv.devices.size(), 2u);  // not 3: GPU 0 is not listed twice
  EXPECT_EQ(inv.devices[0].cuda_device.value_or(""), "cuda:0");
  EXPECT_EQ(inv.devices[0].compute_capability.value_or(""), "9.0");
  EXPECT_EQ(inv.devices[1].cuda_device.value_or(""), "cuda:1");
  EXPECT_EQ(inv.devices[1].memory_free_bytes.value_or(0), 78 * kGpuMemoryUnit);
  ASSERT_EQ(inv.p2p.size(), 2u);
  EXPECT_EQ(inv.p2p[0][1], "OK");
  EXPECT_EQ(inv.p2p[1][0], "OK");
  EXPECT_EQ(inv.p2p[1][1], "X");
  EXPECT_EQ(inv.cuda_status.rfind("ok:", 0), 0u);

  Inventory none;
  merge_cuda(none, no_driver());
  EXPECT_TRUE(none.devices.empty());
  const DoctorReport r = run_doctor(none, {0});
  bool said = false;
  for (const std::string& n : r.notes) said = said || n.rfind("CUDA unusable: no CUDA driver", 0) == 0;
  EXPECT_TRUE(said) << to_text(r);
}

TEST(CudaAvailability, MonitorWatchesTheGpusARunComputesOn) {
  // NVML numbers the GPUs 0, 1; the CUDA runtime (fastest first) calls NVML's 1 "cuda:0".
  Inventory inv;
  for (int i = 0; i < 2; ++i) {
    DeviceInfo d;
    d.index = i;
    d.kind = DeviceKind::kCuda;
    d.cuda_device = "cuda:" + std::to_string(1 - i);
    inv.devices.push_back(d);
  }
  EXPECT_EQ(monitor_indices_of_cuda_gpus(inv, {0}), std::vector<int>{1});
  EXPECT_EQ(monitor_indices_of_cuda_gpus(inv, {1, 0}), (std::vector<int>{0, 1}));
  EXPECT_TRUE(monitor_indices_of_cuda_gpus(inv, {2}).empty());  // unknown: watch every GPU
  // Virtual GPUs are not what NVML measures: their physical GPU is.
  inv.devices[1].virtual_on_gpu = 0;
  EXPECT_TRUE(monitor_indices_of_cuda_gpus(inv, {0}).empty());
}

TEST(CudaAvailability, VirtualGpusFromTheFlagOrTheEnvironment) {
  EXPECT_EQ(parse({}).virtual_gpus, 0);
  EXPECT_EQ(parse({"--virtual-gpus", "3"}).virtual_gpus, 3);
  EXPECT_EQ(parse({}, "2").virtual_gpus, 2);
  EXPECT_EQ(parse({"--virtual-gpus", "4"}, "2").virtual_gpus, 4);  // the flag wins
  EXPECT_EQ(parse({}, "0").virtual_gpus, 0);                       // the variable's 0 is "none"
  // A flag of one kind wins over the other kind's variable.
  const DeviceOptions cpu = parse({"--virtual-devices", "2"}, "4");
  EXPECT_EQ(cpu.virtual_gpus, 0);
  EXPECT_EQ(cpu.virtual_devices, 2);
  const DeviceOptions gpu = parse({"--virtual-gpus", "2"}, nullptr, "4");
  EXPECT_EQ(gpu.virtual_gpus, 2);
  EXPECT_EQ(gpu.virtual_devices, 0);

  EXPECT_NE(input_error({"--virtual-gpus", "0"}).find("--virtual-gpus must be at least 1"), std::string::npos);
  EXPECT_NE(input_error({"--virtual-gpus", "two"}).find("--virtual-gpus must be a whole number"), std::string::npos);
  EXPECT_NE(input_error({}, "many").find("PLEXUS_VIRTUAL_GPUS must be a whole number"), std::string::npos);
  EXPECT_NE(input_error({"--virtual-gpus", "2", "--virtual-devices", "2"}).find("ask for one of them"), std::string::npos);
  EXPECT_NE(input_error({}, "2", "2").find("ask for one of them"), std::string::npos);
}

}  // namespace plexus
