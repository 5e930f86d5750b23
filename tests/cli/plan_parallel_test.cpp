// `plexus plan --tp N --pp M` as a user runs it: every one of the N × M devices reported (JSON
// and table) with the existing keys unchanged, N × M virtual devices without device flags, and
// exit 2 naming the numbers when the heads or the devices do not allow the split.
#include <gtest/gtest.h>

#include "cli_run.h"
#include "core/json.h"

namespace plexus {
namespace {

using testing::expect_usage_error;
using testing::run_no_gpu;
using testing::shell_quote;
using testing::TempDir;

class PlanParallel : public ::testing::Test {
 protected:
  void SetUp() override { model_ = shell_quote(testing::tiny_model(dir_)); }  // 4 heads, 2 kv heads, 4 layers
  Json plan_json(const std::string& flags) {
    const testing::ProcessResult r = run_no_gpu("plan " + model_ + " --context 256 --json " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
    return r.exit_code == 0 ? Json::parse(r.out) : Json();
  }
  TempDir dir_{"plan_parallel"};
  std::string model_;
};

TEST_F(PlanParallel, JsonReportsEveryDeviceOfTheGroups) {
  const Json j = plan_json("--tp 2 --pp 2 --virtual-devices 4");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["tensor_parallel"], 2);
  EXPECT_EQ(j["pipeline_parallel"], 2);
  // The keys every plan has, unchanged: one rank's plan, its devices the two stages.
  for (const char* k : {"strategy", "dtype", "device_map", "placement", "model_bytes", "context", "devices", "budgets_source",
                        "predicted"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  ASSERT_EQ(j["devices"].size(), 2u) << j["devices"].dump();
  const Json& d = j["parallel_devices"];
  ASSERT_EQ(d.size(), 4u) << d.dump();
  std::int64_t kv = 0, weights = 0;
  for (int i = 0; i < 4; ++i) {
    const Json& x = d[static_cast<std::size_t>(i)];
    EXPECT_EQ(x["device"], i);
    EXPECT_EQ(x["tp_rank"], i % 2);
    EXPECT_EQ(x["pp_stage"], i / 2);
    for (const char* k : {"weights_bytes", "kv_cache_bytes", "total_bytes", "budget_bytes", "layers"}) EXPECT_TRUE(x.contains(k)) << k;
    EXPECT_EQ(x["layers"], j["devices"][static_cast<std::size_t>(i / 2)]["layers"]);
    kv += x["kv_cache_bytes"].get<std::int64_t>();
    weights += x["weights_bytes"].get<std::int64_t>();
  }
  // Both ranks of a stage hold as much as the rank's plan puts on the stage (vocabulary 300 splits evenly).
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(d[static_cast<std::size_t>(i)]["weights_bytes"], j["devices"][static_cast<std::size_t>(i / 2)]["weights_bytes"]);
  }
  // The KV cache of the whole model, split over the two ranks (one kv head each).
  const Json one = plan_json("--virtual-devices 1");
  ASSERT_TRUE(one.is_object());
  EXPECT_EQ(kv, one["devices"][0]["kv_cache_bytes"].get<std::int64_t>());
  EXPECT_FALSE(one.contains("parallel_devices"));
  EXPECT_FALSE(one.contains("tensor_parallel"));
  EXPECT_FALSE(one["predicted"].contains("tensor_parallel"));
  // Split weights once, the embedding and norms on both ranks: more than the model, less than twice it.
  EXPECT_GT(weights, one["model_bytes"].get<std::int64_t>());
  EXPECT_LT(weights, 2 * one["model_bytes"].get<std::int64_t>());
  // The prediction has the collectives.
  EXPECT_EQ(j["predicted"]["tensor_parallel"], 2);
  EXPECT_GT(j["predicted"]["communication_share"].get<double>(), 0);
  EXPECT_EQ(j["predicted"]["all_reduce_bytes_per_token"], 2.0 * 4 * 64 * 4);  // 2 × layers × hidden × float32
}

TEST_F(PlanParallel, WithoutDeviceFlagsACpuPlansForNTimesMVirtualDevices) {
  const Json j = plan_json("--tp 2 --pp 2");
  ASSERT_TRUE(j.is_object());
  EXPECT_NE(j["budgets_source"].get<std::string>().find("4 virtual devices"), std::string::npos) << j["budgets_source"];
  EXPECT_EQ(j["parallel_devices"].size(), 4u);
  // --pp alone: stages on their own devices.
  const Json pp = plan_json("--pp 2");
  ASSERT_TRUE(pp.is_object());
  EXPECT_EQ(pp["tensor_parallel"], 1);
  ASSERT_EQ(pp["parallel_devices"].size(), 2u);
  EXPECT_EQ(pp["parallel_devices"][1]["pp_stage"], 1);
}

TEST_F(PlanParallel, TableShowsTheDevices) {
  const testing::ProcessResult r = run_no_gpu("plan " + model_ + " --context 256 --tp 2 --virtual-devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tensor parallel 2 × pipeline parallel 1: 2 devices"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tp rank"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lm_head/2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the plan of one rank"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensor parallel 2: collectives"), std::string::npos) << r.out;
}

TEST_F(PlanParallel, SplitsTheModelOrDevicesDoNotAllowAreUsageErrors) {
  expect_usage_error(run_no_gpu("plan " + model_ + " --tp 3"), "--tp 3",
                     {"--tp 3", "4 attention heads, 2 kv heads", "--tp 1, 2, 4 work"});
  expect_usage_error(run_no_gpu("plan " + model_ + " --tp 8 --virtual-devices 4"), "--tp 8", {"--tp 8", "--tp 1, 2, 4 work"});
  expect_usage_error(run_no_gpu("plan " + model_ + " --tp 4 --pp 2 --virtual-devices 4"), "--tp 4 --pp 2 on 4 devices",
                     {"needs 8 devices", "has 4", "--virtual-devices 8"});
  // Budgets too small for a rank's shard: said in the run's terms.
  expect_usage_error(run_no_gpu("plan " + model_ + " --tp 2 --max-memory 0=100KB,1=100KB,cpu=1GB --context 64"), "small budgets",
                     {"--tp 2: one tensor-parallel rank's plan", "s·2 … s·2 + 1", "does not fit"});
  expect_usage_error(run_no_gpu("plan " + model_ + " --tp 2 --strategy fastest"), "--tp 2 --strategy fastest",
                     {"--strategy fastest", "--tp"});
}

}  // namespace
}  // namespace plexus
