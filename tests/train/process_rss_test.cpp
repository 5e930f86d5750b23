// The RSS probe of the trial step: touching 64 MiB raises the peak by about that much, and a
// reset brings the peak back to the current RSS.
#include "train/process_rss.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#if defined(__SANITIZE_ADDRESS__)
#define PLEXUS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLEXUS_ASAN 1
#endif
#endif

namespace plexus {
namespace {

TEST(ProcessRss, PeakFollowsTouchedMemoryAndResets) {
  if (current_rss_bytes() < 0) GTEST_SKIP() << "no /proc/self/status";
  if (!reset_peak_rss()) GTEST_SKIP() << "/proc/self/clear_refs is not writable here";
  const std::int64_t before = current_rss_bytes();
  constexpr std::int64_t kBytes = 64 << 20;
  {
    std::unique_ptr<char[]> block(new char[kBytes]);
    std::memset(block.get(), 1, kBytes);
    volatile char sink = block[kBytes - 1];
    (void)sink;
  }
  const std::int64_t peak = peak_rss_bytes();
  EXPECT_GE(peak - before, kBytes - (1 << 20));
  ASSERT_TRUE(reset_peak_rss());
#ifndef PLEXUS_ASAN  // ASan keeps freed blocks in its quarantine
  // The block is unmapped again (a large allocation): the reset lowers the peak below it.
  EXPECT_LT(peak_rss_bytes(), peak - kBytes / 2);
#endif
}

}  // namespace
}  // namespace plexus
