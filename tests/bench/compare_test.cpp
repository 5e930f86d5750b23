// `bench compare`: values side by side with ratios to the first, sweep summaries as columns, and
// clear errors for files that are missing or not results.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bench/compare.h"
#include "core/error.h"
#include "test_util.h"

namespace plexus::bench {
namespace {

Json compared_result(double tps, double ttft) {
  return {{"throughput", {{"tokens_per_s", tps}}}, {"latency", {{"ttft_ms", {{"p50", ttft}}}}}, {"energy", {{"total_j", nullptr}}}};
}

std::string write_result(const testing::TempDir& d, const std::string& name, const Json& j) {
  std::ofstream(d / name) << j.dump();
  return d / name;
}

TEST(Compare, RatiosToTheFirst) {
  testing::TempDir d("bench-compare");
  const auto cols = load_compare_inputs({write_result(d, "a.json", compared_result(100, 10)), write_result(d, "b.json", compared_result(150, 5))});
  const Json j = compare_json(cols);
  EXPECT_EQ(j["columns"], Json::array({"a.json", "b.json"}));
  bool seen_tps = false, seen_energy = false;
  for (const Json& m : j["metrics"]) {
    if (m["metric"] == "throughput.tokens_per_s") {
      seen_tps = true;
      EXPECT_EQ(m["values"], Json::array({100.0, 150.0}));
      EXPECT_DOUBLE_EQ(m["ratios"][1], 1.5);
      EXPECT_EQ(m["better"], "higher");
    }
    if (m["metric"] == "latency.ttft_ms.p50") {
      EXPECT_DOUBLE_EQ(m["ratios"][1], 0.5);
    }
    if (m["metric"] == "energy.total_j") seen_energy = true;
  }
  EXPECT_TRUE(seen_tps);
  EXPECT_FALSE(seen_energy);  // unmeasured everywhere: left out
  const std::string t = compare_table(cols);
  EXPECT_NE(t.find("throughput.tokens_per_s"), std::string::npos);
  EXPECT_NE(t.find("1.50x"), std::string::npos);
  EXPECT_NE(t.find("0.50x"), std::string::npos);
}

TEST(Compare, CommunicationPerTokenIsComparedWhenARunHasIt) {
  testing::TempDir d("bench-compare");
  Json tp = compared_result(90, 12);
  tp["execution"] = {{"communication", {{"seconds_per_token", 0.002}, {"share_of_forward_time", 0.4}}}};
  const Json j = compare_json(load_compare_inputs({write_result(d, "one.json", compared_result(100, 10)), write_result(d, "tp.json", tp)}));
  bool seen = false;
  for (const Json& m : j["metrics"]) {
    if (m["metric"] != "execution.communication.share_of_forward_time") continue;
    seen = true;
    EXPECT_EQ(m["values"], Json::array({nullptr, 0.4}));
    EXPECT_EQ(m["better"], "lower");
  }
  EXPECT_TRUE(seen);
}

TEST(Compare, SweepSummaryGivesOneColumnPerRun) {
  testing::TempDir d("bench-compare");
  const Json summary = {{"name", "s"}, {"runs", {compared_result(1, 1), compared_result(2, 2)}}};
  const auto cols = load_compare_inputs({write_result(d, "s.json", summary), write_result(d, "b.json", compared_result(4, 4))});
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[1].label, "s.json#1");
}

TEST(Compare, SameFileNamesInDifferentDirectoriesGetDistinctLabels) {
  testing::TempDir d("bench-compare");
  std::filesystem::create_directories(d / "a");
  std::filesystem::create_directories(d / "b");
  const auto cols = load_compare_inputs({write_result(d, "a/demo.json", compared_result(1, 1)), write_result(d, "b/demo.json", compared_result(2, 2))});
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].label, "a/demo.json");
  EXPECT_EQ(cols[1].label, "b/demo.json");
  EXPECT_EQ(distinct_labels({"x/run/demo.json", "y/run/demo.json", "z/other.json"}),
            (std::vector<std::string>{"x/run/demo.json", "y/run/demo.json", "other.json"}));
  EXPECT_EQ(distinct_labels({"a.json", "b.json"}), (std::vector<std::string>{"a.json", "b.json"}));
}

TEST(Compare, FailedPointsOfASweepAreLeftOut) {
  testing::TempDir d("bench-compare");
  const Json failed = {{"name", "s"}, {"status", "failed"}, {"error", "boom"}};
  const Json summary = {{"name", "s"}, {"runs", {compared_result(1, 1), failed, compared_result(3, 3)}}};
  const auto cols = load_compare_inputs({write_result(d, "s.json", summary), write_result(d, "b.json", compared_result(4, 4))});
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[1].label, "s.json#2");  // numbered as in the sweep
}

TEST(Compare, BadInputsAreInputErrors) {
  testing::TempDir d("bench-compare");
  const std::string a = write_result(d, "a.json", compared_result(1, 1));
  EXPECT_THROW(load_compare_inputs({a, d / "missing.json"}), InputError);
  std::ofstream(d / "bad.json") << "{not json";
  EXPECT_THROW(load_compare_inputs({a, d / "bad.json"}), InputError);
  EXPECT_THROW(load_compare_inputs({a, write_result(d, "other.json", Json{{"x", 1}})}), InputError);
  EXPECT_THROW(load_compare_inputs({a}), InputError);
}

}  // namespace
}  // namespace plexus::bench
