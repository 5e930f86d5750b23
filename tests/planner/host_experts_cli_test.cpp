// Host-kept experts chosen by the planner, through the real binary: `plan --strategy fastest` on
// Mixtral-8x7B's shape ranks --n-cpu-moe plans against layer offload and says which won and why;
// `stages` and `fastest` on a tiny Qwen3-MoE that does not fit its device budget keep experts on
// the host by themselves, and the run computes the NLL of one device bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/json.h"
#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

// `plexus ARGS` with GPUs hidden and the calibration file of `cache` (a fixed host: 100 GB/s,
// 1 TFLOP/s at 16 threads), so that the predictions do not depend on this machine.
testing::ProcessResult plexus_with(const TempDir& cache, const std::string& args) {
  return run_command("CUDA_VISIBLE_DEVICES= XDG_CACHE_HOME=" + shell_quote(cache.path()) + " " + shell_quote(PLEXUS_BINARY) + " " + args);
}

void write_calibration(const TempDir& cache) {
  std::filesystem::create_directories(cache / "plexus");
  const Json c = {{"format", "plexus-calibration-1"},
                  {"cpu", "test host"},
                  {"by_threads", Json::array({Json{{"threads", 16},
                                                   {"memory_bandwidth_bytes_per_s", 100e9},
                                                   {"flops_f32", 1e12},
                                                   {"flops_16bit", 1e12}}})},
                  {"copy_bytes_per_s", 20e9},
                  {"disk_read_bytes_per_s", 2e9}};
  std::ofstream(cache / "plexus/calibration.json") << c.dump(2);
}

TEST(HostExpertsCli, FastestRanksExpertsOnTheHostAgainstLayerOffload) {
  const TempDir dir{"host_experts_fastest"}, cache{"host_experts_cache"};
  write_calibration(cache);
  const std::string model = shell_quote(dir / "mixtral");
  ASSERT_EQ(plexus_with(cache, "make-model " + model + " --preset mixtral-8x7b --config-only").exit_code, 0);
  const std::string args = "plan " + model + " --max-memory 0=40GiB,cpu=256GiB --gpu h100-sxm --context 4096 --threads 16 --strategy fastest";
  const testing::ProcessResult r = plexus_with(cache, args + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  const Json c = j["fastest"]["candidates"];
  const int n = c[0]["n_cpu_moe"].get<int>();
  ASSERT_GT(n, 0) << c.dump(1);
  ASSERT_LT(n, 32);
  EXPECT_EQ(c[0]["plan"], "stages on 0 with --n-cpu-moe " + std::to_string(n));
  // The chosen plan keeps the first n layers' experts on the host, and the prediction says the
  // host bounds the step.
  EXPECT_EQ(j["experts_on_cpu"].size(), static_cast<std::size_t>(n));
  EXPECT_EQ(j["experts_on_cpu"].back(), n - 1);
  EXPECT_EQ(j["predicted"]["bottleneck"]["resource"], "host_experts");
  EXPECT_EQ(j["predicted"]["host_expert_layers"], n);
  EXPECT_GT(j["predicted"]["host_experts_share"].get<double>(), 0.5);
  // Offloading whole layers and every layer's experts on the host were ranked too, lower.
  bool offload = false, all = false;
  for (const Json& x : c) {
    if (x["n_cpu_moe"] == 0 && x["strategy"] == "stages") {
      offload = true;
      EXPECT_LT(x["decode_tokens_per_s"].get<double>(), 0.5 * c[0]["decode_tokens_per_s"].get<double>()) << x.dump();
    }
    all = all || x["n_cpu_moe"] == 32;
  }
  EXPECT_TRUE(offload) << c.dump(1);
  EXPECT_TRUE(all) << c.dump(1);
  const testing::ProcessResult t = plexus_with(cache, args);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("fastest by throughput: stages on 0 with --n-cpu-moe " + std::to_string(n)), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("the host computes the experts of " + std::to_string(n) + " layer(s)"), std::string::npos) << t.out;
  // `--strategy stages` alone makes the same choice.
  const Json s = Json::parse(plexus_with(cache, "plan " + model + " --max-memory 0=40GiB,cpu=256GiB --context 4096 --threads 16 --gpu h100-sxm --json").out);
  EXPECT_EQ(s["device_map"], j["device_map"]);
}

TEST(HostExpertsCli, StagesAndFastestRunWithTheExpertsTheyKeepOnTheHost) {
  const TempDir dir{"host_experts_run"}, cache{"host_experts_run_cache"};
  write_calibration(cache);
  MakeModelOptions o;
  o.arch = Arch::kQwen3Moe;
  o.dtype = DType::kF32;
  o.seed = 5;
  o.std = 0.08;
  o.vocab_size = 1500;
  write_random_model(dir.path(), o);
  const std::string model = shell_quote(dir.path());
  auto plan = [&](const std::string& extra) {
    const testing::ProcessResult r = plexus_with(cache, "plan " + model + " --context 64 --threads 16 --batch-tokens 5 --json " + extra);
    EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.err;
    return r.exit_code == 0 ? Json::parse(r.out) : Json();
  };
  const std::int64_t whole = plan("--virtual-devices 1")["devices"][0]["total_bytes"].get<std::int64_t>();
  const std::int64_t without = plan("--virtual-devices 1 --cpu-moe")["devices"][0]["total_bytes"].get<std::int64_t>();
  ASSERT_LT(without, whole);
  const std::string memory = " --max-memory 0=" + std::to_string((whole + without) / 2) + ",cpu=1GiB";
  const std::string budgets = " --context 64 --threads 16" + memory;
  const Json chosen = plan(memory);
  ASSERT_FALSE(chosen["experts_on_cpu"].empty()) << chosen.dump(1);
  const std::string ppl = "perplexity " + model + " --ids 3,14,15,92,65,35,89,79,32,38,46,26 --batch-tokens 5 --json";
  const testing::ProcessResult one = plexus_with(cache, ppl);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  for (const char* strategy : {"stages", "fastest"}) {
    const testing::ProcessResult r = plexus_with(cache, ppl + budgets + " --strategy " + strategy + " --verbose");
    ASSERT_EQ(r.exit_code, 0) << strategy << "\n" << r.err;
    EXPECT_EQ(Json::parse(r.out)["nll"], Json::parse(one.out)["nll"]) << strategy;
    EXPECT_NE(r.err.find("computed on the host"), std::string::npos) << strategy << "\n" << r.err;
  }
}

}  // namespace
}  // namespace plexus
