// `--expert-parallel N` / `--ep N` as a user runs it: perplexity of a Qwen3-MoE model on N
// virtual devices (its layers resident, or streamed from the host) gives one device's NLL, `plan --ep N` reports which experts each rank holds
// (whole, the same bytes per rank as --tp N's slices), and the inputs it cannot run (another
// --tp, a dense model, N not dividing the experts) exit 2 naming the numbers.
#include <gtest/gtest.h>

#include "cli_run.h"
#include "core/json.h"
#include "model/make_model.h"

namespace plexus {
namespace {

using testing::expect_usage_error;
using testing::run_no_gpu;
using testing::shell_quote;
using testing::TempDir;

class ExpertParallelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeModelOptions o;  // Qwen3-MoE tiny: 8 experts top-2 (layer 1 dense), 4 heads, 2 kv heads
    o.arch = Arch::kQwen3Moe;
    o.dtype = DType::kF32;
    o.vocab_size = 300;
    o.seed = 9;
    write_random_model(dir_.path(), o);
    model_ = shell_quote(dir_.path());
  }
  Json run_json(const std::string& args) {
    const testing::ProcessResult r = run_no_gpu(args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    return r.exit_code == 0 ? Json::parse(r.out) : Json();
  }
  TempDir dir_{"cli_ep"};
  std::string model_;
};

TEST_F(ExpertParallelCli, PerplexityMatchesOneDevice) {
  const std::string ppl = "perplexity " + model_ + " --ids 1,5,9,100,200,299,7,8,9,10,42,17 --json --threads 2";
  const Json one = run_json(ppl);
  // The last: each rank's layers offloaded to the host and streamed through its device (the
  // experts it does not hold are not copied).
  for (const std::string flags : {"--ep 2", "--expert-parallel 4", "--ep 2 --tp 2",
                                  "--ep 2 --max-memory 0=1800KiB,1=1800KiB,cpu=4MiB --context 64"}) {
    const Json ep = run_json(ppl + " " + flags);
    ASSERT_TRUE(ep.is_object()) << flags;
    ASSERT_EQ(ep["nll"].size(), one["nll"].size()) << flags;
    for (std::size_t i = 0; i < one["nll"].size(); ++i) {
      EXPECT_NEAR(ep["nll"][i].get<double>(), one["nll"][i].get<double>(), 1e-4) << flags << " token " << i + 1;
    }
    if (flags.find("--max-memory") != std::string::npos) {
      EXPECT_GT(ep["execution"]["streamed_bytes"].get<std::int64_t>(), 0);
    }
  }
}

TEST_F(ExpertParallelCli, PlanSaysWhichExpertsEachRankHolds) {
  const Json ep = run_json("plan " + model_ + " --context 64 --json --ep 2");
  const Json tp = run_json("plan " + model_ + " --context 64 --json --tp 2");
  ASSERT_TRUE(ep.is_object() && tp.is_object());
  EXPECT_EQ(ep["tensor_parallel"], 2);
  EXPECT_EQ(ep["expert_parallel"], 2);
  EXPECT_EQ(tp["expert_parallel"], 1);
  const Json& d = ep["parallel_devices"];
  ASSERT_EQ(d.size(), 2u) << d.dump();
  for (int r = 0; r < 2; ++r) {
    const Json& x = d[static_cast<std::size_t>(r)];
    EXPECT_EQ(x["tp_rank"], r);
    EXPECT_EQ(x["experts"]["first"], 4 * r);
    EXPECT_EQ(x["experts"]["count"], 4);
    // 4 whole experts or a half of each of 8: the same bytes (f32, no block rounding).
    EXPECT_EQ(x["weights_bytes"], tp["parallel_devices"][static_cast<std::size_t>(r)]["weights_bytes"]);
    EXPECT_FALSE(tp["parallel_devices"][static_cast<std::size_t>(r)].contains("experts"));
  }
  const testing::ProcessResult text = run_no_gpu("plan " + model_ + " --context 64 --ep 2");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("expert parallel: tp rank r holds experts r·4 … r·4 + 3 of the 8 of each mixture layer, whole"),
            std::string::npos)
      << text.out;
}

TEST_F(ExpertParallelCli, SizesItCannotRunAreUsageErrors) {
  for (const char* cmd : {"plan", "perplexity"}) {
    const std::string base = std::string(cmd) + " " + model_ + (std::string(cmd) == "plan" ? " --context 64" : " --ids 1,2,3");
    expect_usage_error(run_no_gpu(base + " --ep 2 --tp 4"), std::string(cmd) + " --ep 2 --tp 4",
                       {"--ep 2 and --tp 4", "one tensor-parallel group", "give --ep 2 alone"});
    expect_usage_error(run_no_gpu(base + " --ep 3"), std::string(cmd) + " --ep 3",
                       {"--ep 3 cannot spread this model over 3 ranks", "its 8 experts a layer", "--ep 1, 2, 4 work"});
    expect_usage_error(run_no_gpu(base + " --ep 0"), std::string(cmd) + " --ep 0", {"--expert-parallel must be between 1 and 4096, got 0"});
  }
  TempDir dense_dir("cli_ep_dense");
  const std::string dense = shell_quote(testing::tiny_model(dense_dir));
  expect_usage_error(run_no_gpu("perplexity " + dense + " --ids 1,2,3 --ep 2"), "--ep 2 on a dense model",
                     {"--ep 2: this model (LlamaForCausalLM) has no experts", "--tp 2"});
  expect_usage_error(run_no_gpu("plan " + dense + " --ep 2"), "plan --ep 2 on a dense model", {"has no experts"});
}

}  // namespace
}  // namespace plexus
