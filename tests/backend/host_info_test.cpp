// Host facts parsed from sample /proc text, and device options from flags and environment.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/device_options.h"
#include "backend/host_info.h"
#include "core/error.h"

namespace plexus {

TEST(HostInfo, ParsesCpuinfo) {
  const std::string text =
      "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 0\ncore id\t: 0\n"
      "flags\t\t: fpu sse2 avx2 fma f16c avx512f avx512_bf16 amx_int8 avx512bw avx_vnni\n\n"
      "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 0\ncore id\t: 0\n"
      "flags\t\t: fpu sse2 avx2 fma f16c avx512f avx512_bf16\n\n"
      "processor\t: 2\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 1\ncore id\t: 0\n"
      "flags\t\t: fpu sse2 avx2 fma f16c avx512f avx512_bf16\n";
  HostInfo info;
  parse_cpuinfo(text, info);
  EXPECT_EQ(info.cpu_model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(info.logical_cores, 3);
  EXPECT_EQ(info.physical_cores, 2);
  EXPECT_EQ(info.sockets, 2);
  EXPECT_TRUE(info.isa.avx2 && info.isa.fma && info.isa.f16c && info.isa.avx512f && info.isa.avx512_bf16);
  EXPECT_TRUE(info.isa.amx_int8 && info.isa.avx512bw && info.isa.avx_vnni);
  EXPECT_FALSE(info.isa.amx_bf16 || info.isa.avx512_vnni || info.isa.avx512vl);
  EXPECT_EQ(isa_summary(info.isa), "avx2 avx512f avx512bw avx512_bf16 avx_vnni amx_int8 f16c fma");
  EXPECT_EQ(isa_summary(IsaFeatures{}), "none");
}

TEST(HostInfo, ParsesMeminfoAndReadsTheRealHost) {
  HostInfo info;
  parse_meminfo("MemTotal:       16384 kB\nMemFree:  1024 kB\nMemAvailable:   8192 kB\n", info);
  EXPECT_EQ(info.memory_total_bytes, 16384u * 1024);
  EXPECT_EQ(info.memory_available_bytes, 8192u * 1024);
  HostInfo old_kernel;
  parse_meminfo("MemTotal: 100 kB\nMemFree: 40 kB\n", old_kernel);
  EXPECT_EQ(old_kernel.memory_available_bytes, 40u * 1024);

  const HostInfo host = read_host_info();
  EXPECT_GE(host.logical_cores, 1);
  EXPECT_GE(host.numa_nodes, 1);
  EXPECT_GT(host.memory_total_bytes, 0u);
  const Json j = to_json(host);
  for (const char* flag : {"avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8"}) EXPECT_TRUE(j["isa"].contains(flag)) << flag;
}

TEST(DeviceOptions, FlagsWinOverEnvironment) {
  ::setenv("PLEXUS_VIRTUAL_DEVICES", "3", 1);
  ::setenv("PLEXUS_VIRTUAL_DEVICE_MEMORY", "2GiB", 1);
  {
    Args args("t", "t");
    add_device_options(args);
    ASSERT_TRUE(args.parse(std::vector<std::string>{}));
    const DeviceOptions o = device_options_from(args);
    EXPECT_EQ(o.virtual_devices, 3);
    EXPECT_EQ(o.virtual_device_memory, 2ull << 30);
    DeviceRegistry registry = make_registry(o);
    EXPECT_EQ(registry.accelerator_count(), 3);
    EXPECT_EQ(registry.accelerator(2).memory_total(), 2ull << 30);
  }
  {
    Args args("t", "t");
    add_device_options(args);
    ASSERT_TRUE(args.parse(std::vector<std::string>{"--virtual-devices", "2", "--virtual-device-memory", "1MiB"}));
    const DeviceOptions o = device_options_from(args);
    EXPECT_EQ(o.virtual_devices, 2);
    EXPECT_EQ(o.virtual_device_memory, 1u << 20);
  }
  ::setenv("PLEXUS_VIRTUAL_DEVICES", "many", 1);
  {
    Args args("t", "t");
    add_device_options(args);
    ASSERT_TRUE(args.parse(std::vector<std::string>{}));
    try {
      device_options_from(args);
      FAIL() << "bad PLEXUS_VIRTUAL_DEVICES accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("PLEXUS_VIRTUAL_DEVICES"), std::string::npos);
    }
  }
  ::unsetenv("PLEXUS_VIRTUAL_DEVICES");
  ::unsetenv("PLEXUS_VIRTUAL_DEVICE_MEMORY");
}

}  // namespace plexus
