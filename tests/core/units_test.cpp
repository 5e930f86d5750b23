// Memory size strings, accelerate's conventions.
#include "core/units.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace plexus {

TEST(Units, BinaryDecimalAndBytes) {
  EXPECT_EQ(parse_memory_size("10GiB"), 10ull << 30);
  EXPECT_EQ(parse_memory_size("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_memory_size("4KiB"), 4096ull);
  EXPECT_EQ(parse_memory_size("10GB"), 10000000000ull);
  EXPECT_EQ(parse_memory_size("1.5GB"), 1500000000ull);
  EXPECT_EQ(parse_memory_size("200MB"), 200000000ull);
  EXPECT_EQ(parse_memory_size("123"), 123ull);
  EXPECT_EQ(parse_memory_size(" 2gib "), 2ull << 30);
}

TEST(Units, RejectsGarbage) {
  EXPECT_THROW(parse_memory_size(""), InputError);
  EXPECT_THROW(parse_memory_size("GiB"), InputError);
  EXPECT_THROW(parse_memory_size("10XB"), InputError);
  EXPECT_THROW(parse_memory_size("1.2.3GB"), InputError);
  EXPECT_THROW(parse_memory_size("1.5"), InputError);
}

TEST(Units, Formats) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(3ull << 30), "3.00 GiB");
}

// A budget printed as advice parses back to at least the bytes asked for, with no space to break
// it apart on a command line.
TEST(Units, BudgetsRoundUpAndPasteBack) {
  EXPECT_EQ(format_budget(512), "512");
  EXPECT_EQ(format_budget(1536), "1.50KiB");
  EXPECT_EQ(format_budget(85645887), "81.68MiB");  // 81.6779... MiB: up, not to the nearest
  EXPECT_EQ(format_budget(3ull << 30), "3.00GiB");
  std::uint64_t n = 1;
  for (int i = 0; i < 2000; ++i) {
    n = n * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t bytes = (n >> 20) % (1ull << (10 + i % 40));
    const std::string text = format_budget(bytes);
    EXPECT_EQ(text.find(' '), std::string::npos) << text;
    EXPECT_GE(parse_memory_size(text), bytes) << text;
    EXPECT_LE(parse_memory_size(text), bytes + bytes / 100 + 1) << text;  // and not far above (a hundredth of the unit)
  }
}

}  // namespace plexus
