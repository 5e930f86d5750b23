// NVML probing against the project's fake NVML: facts, topology, p2p, missing symbols and a
// missing library.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/nvml/nvml_probe.h"

namespace plexus {

namespace {
std::string data(const std::string& name) { return std::string(PLEXUS_SOURCE_DIR) + "/tests/backend/data/" + name; }

std::unique_ptr<NvmlLibrary> open_fake(const char* library, const std::string& script) {
  ::setenv("PLEXUS_FAKE_NVML_SCRIPT", data(script).c_str(), 1);
  std::string why;
  auto nvml = NvmlLibrary::open(library, &why);
  EXPECT_NE(nvml, nullptr) << why;
  return nvml;
}
}  // namespace

TEST(Nvml, ProbesDevicesAndTopology) {
  auto nvml = open_fake(FAKE_NVML_LIBRARY, "four_gpus.json");
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->driver_version().value_or(""), "550.54.15");
  const NvmlProbe probe = probe_nvml(*nvml);
  ASSERT_EQ(probe.devices.size(), 4u);
  const DeviceInfo& d0 = probe.devices[0];
  EXPECT_EQ(d0.kind, DeviceKind::kCuda);
  EXPECT_EQ(d0.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d0.uuid.value_or(""), "GPU-aaaa-0");
  EXPECT_EQ(d0.memory_total_bytes.value_or(0), 80ull << 30);
  EXPECT_EQ(d0.memory_free_bytes.value_or(0), 79ull << 30);
  EXPECT_EQ(d0.compute_capability.value_or(""), "9.0");
  EXPECT_EQ(d0.power_limit_w.value_or(0), 700.0);
  EXPECT_EQ(d0.max_sm_clock_mhz.value_or(0), 1980u);
  EXPECT_EQ(d0.pci_bus_id.value_or(""), "00000000:18:00.0");
  EXPECT_EQ(probe.devices[3].processes.value_or(-1), 3);
  EXPECT_EQ(probe.devices[2].temperature_c.value_or(0), 90.0);
  EXPECT_EQ(probe.topology[0][1], "NV4");
  EXPECT_EQ(probe.topology[1][0], "NV4");
  EXPECT_EQ(probe.topology[0][2], "SYS");
  EXPECT_EQ(probe.topology[2][3], "PIX");
  EXPECT_EQ(probe.topology[3][3], "X");
  EXPECT_EQ(probe.p2p[0][1], "OK");
  EXPECT_EQ(probe.p2p[1][3], "NS");
}

TEST(Nvml, MissingSymbolsAreUnavailableNotFatal) {
  auto nvml = open_fake(FAKE_NVML_MINIMAL_LIBRARY, "four_gpus.json");
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->api().total_energy, nullptr);
  EXPECT_NE(nvml->api().power_usage, nullptr);
  const NvmlProbe probe = probe_nvml(*nvml);
  ASSERT_EQ(probe.devices.size(), 4u);
  EXPECT_EQ(probe.devices[0].memory_total_bytes.value_or(0), 80ull << 30);
  EXPECT_FALSE(probe.devices[0].compute_capability.has_value());
  EXPECT_FALSE(probe.devices[0].temperature_c.has_value());
  EXPECT_FALSE(probe.devices[0].power_limit_w.has_value());
  EXPECT_FALSE(probe.devices[0].processes.has_value());
  EXPECT_TRUE(probe.devices[0].problems.empty());
  EXPECT_EQ(probe.topology[0][1], "?");
  EXPECT_EQ(probe.p2p[0][1], "?");
}

TEST(Nvml, FailingQueriesAreReportedAsProblems) {
  auto nvml = open_fake(FAKE_NVML_LIBRARY, "lost_gpu.json");
  ASSERT_NE(nvml, nullptr);
  const NvmlProbe probe = probe_nvml(*nvml);
  ASSERT_EQ(probe.devices.size(), 2u);
  EXPECT_TRUE(probe.devices[0].problems.empty());
  EXPECT_FALSE(probe.devices[1].memory_free_bytes.has_value());
  ASSERT_EQ(probe.devices[1].problems.size(), 2u);
  EXPECT_NE(probe.devices[1].problems[0].find("GPU is lost"), std::string::npos);
}

TEST(Nvml, AMissingLibrarySaysWhy) {
  std::string why;
  EXPECT_EQ(NvmlLibrary::open("/nonexistent/libnvidia-ml.so.1", &why), nullptr);
  EXPECT_NE(why.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << why;
  EXPECT_NE(why.find("PLEXUS_NVML_LIBRARY"), std::string::npos) << why;
  EXPECT_EQ(topology_label(40), "NODE");
  EXPECT_EQ(topology_label(7), "?");
}

}  // namespace plexus
