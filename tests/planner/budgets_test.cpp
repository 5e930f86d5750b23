// Budgets (--max-memory) and device names.
#include <gtest/gtest.h>

#include "core/error.h"
#include "planner/budgets.h"

namespace plexus {
namespace {

TEST(Budgets, ParsesAccelerateStringsInDeviceOrder) {
  const Budgets b = parse_max_memory("cpu=64GiB, 1=10GB,0=1.5MiB,disk=1TB");
  ASSERT_EQ(b.list().size(), 4u);
  EXPECT_EQ(b.list()[0].device, DeviceId::accelerator(0));
  EXPECT_EQ(b.list()[0].bytes, 1572864u);
  EXPECT_EQ(b.list()[1].device, DeviceId::accelerator(1));
  EXPECT_EQ(b.list()[1].bytes, 10000000000u);
  EXPECT_EQ(b.list()[2].device, DeviceId::cpu());
  EXPECT_EQ(b.list()[2].bytes, 64ull << 30);
  EXPECT_EQ(b.list()[3].device, DeviceId::disk());
  EXPECT_EQ(b.accelerator_total(), 10001572864u);
  EXPECT_EQ(parse_max_memory("0:123").get(DeviceId::accelerator(0)), 123u);
}

TEST(Budgets, RejectsBadEntriesNamingThem) {
  for (const char* bad : {"", "0", "=1GB", "0=", "gpu=1GB", "0=1XB", "0=1GB,0=2GB", "-1=1GB"}) {
    EXPECT_THROW(parse_max_memory(bad), InputError) << bad;
  }
  try {
    parse_max_memory("0=10GiB,x1=3GB");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x1"), std::string::npos) << e.what();
  }
}

TEST(Budgets, SizesBeyondSigned64BitPlansAreRefused) {
  // 10 EiB fits the unsigned budget but wraps negative in a plan's signed sizes.
  EXPECT_THROW(parse_max_memory("0=10000000TiB"), InputError);
  const Budgets b = parse_max_memory("0=4194304TiB,1=4194304TiB,2=4194304TiB,3=4194304TiB,4=4194304TiB");  // 5 x 2^62 bytes
  try {
    (void)b.accelerator_total();
    FAIL() << "the total wrapped";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("budgets added up overflows"), std::string::npos) << e.what();
  }
}

TEST(DeviceId, ParsesAndPrintsAccelerateNames) {
  EXPECT_EQ(DeviceId::parse("3", "t"), DeviceId::accelerator(3));
  EXPECT_EQ(DeviceId::parse("cuda:2", "t"), DeviceId::accelerator(2));
  EXPECT_EQ(DeviceId::parse("cpu", "t").to_string(), "cpu");
  EXPECT_EQ(DeviceId::from_json(Json(1), "t"), DeviceId::accelerator(1));
  EXPECT_EQ(DeviceId::from_json(Json("disk"), "t"), DeviceId::disk());
  EXPECT_EQ(DeviceId::accelerator(2).to_json(), Json(2));
  EXPECT_THROW(DeviceId::parse("gpu0", "t"), InputError);
  EXPECT_THROW(DeviceId::from_json(Json(-1), "t"), InputError);
  EXPECT_THROW(DeviceId::from_json(Json(1.5), "t"), InputError);
  EXPECT_TRUE(DeviceId::accelerator(7) < DeviceId::cpu());
  EXPECT_TRUE(DeviceId::cpu() < DeviceId::disk());
}

}  // namespace
}  // namespace plexus
