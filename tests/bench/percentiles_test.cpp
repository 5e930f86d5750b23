// Percentiles: numpy's linear interpolation, checked on values worked by hand.
#include <gtest/gtest.h>

#include "bench/bench_metrics.h"
#include "bench/percentiles.h"

namespace plexus::bench {
namespace {

TEST(Percentiles, LinearInterpolationLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], [0, 50, 90, 99, 100]) = [1, 2.5, 3.7, 3.97, 4]
  const std::vector<double> v = {4, 1, 3, 2};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(*percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(*percentile(v, 50), 2.5);
  EXPECT_NEAR(*percentile(v, 90), 3.7, 1e-12);
  EXPECT_NEAR(*percentile(v, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(*percentile(v, 100), 4);
  // numpy.percentile(range(1, 11), 90) = 9.1
  std::vector<double> ten;
  for (int i = 1; i <= 10; ++i) ten.push_back(i);
  EXPECT_NEAR(*percentile(ten, 90), 9.1, 1e-12);
  EXPECT_DOUBLE_EQ(*percentile({7}, 99), 7);
  EXPECT_FALSE(percentile({}, 50));
}

TEST(Percentiles, LatencyStats) {
  const LatencyStats s = latency_stats({10, 20, 30});
  EXPECT_EQ(s.count, 3);
  EXPECT_DOUBLE_EQ(*s.p50, 20);
  EXPECT_DOUBLE_EQ(*s.mean, 20);
  EXPECT_DOUBLE_EQ(*s.min, 10);
  EXPECT_DOUBLE_EQ(*s.max, 30);
  const Json j = to_json(latency_stats({}));
  EXPECT_TRUE(j["p50"].is_null());
  EXPECT_EQ(j["count"], 0);
}

TEST(Percentiles, TpotLeavesOutSingleTokenSamples) {
  // (e2e - ttft) / (output_tokens - 1)
  const std::vector<SampleTiming> s = {{5, 11, 100, 300}, {5, 1, 50, 50}, {3, 3, 10, 30}};
  EXPECT_EQ(tpot_values(s), (std::vector<double>{20, 10}));
}

}  // namespace
}  // namespace plexus::bench
