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

}  // namespace plexus
