// `generate` / `perplexity` across virtual devices through the real binary: same ids and NLL as
// one device, the plan with --verbose, execution stats in JSON, a custom --device-map.
#include <gtest/gtest.h>

#include <fstream>

#include "core/json.h"
#include "kernels/cpu/isa.h"
#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;
using testing::TempDir;

class ExecCli : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeModelOptions o;
    o.seed = 5;
    o.std = 0.08;
    o.vocab_size = 1500;
    write_random_model(dir_.path(), o);
  }
  Json run_json(const std::string& args) {
    const testing::ProcessResult r = run_plexus(args + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out);
  }
  std::string model() const { return shell_quote(dir_.path()); }
  TempDir dir_{"exec_cli"};
};

TEST_F(ExecCli, GenerateAndPerplexityMatchOneDevice) {
  const std::string gen = "generate " + model() + " --ids 3,14,15,92,65 --max-tokens 6 --threads 2";
  const Json one = run_json(gen);
  const Json four = run_json(gen + " --virtual-devices 4 --strategy balanced");
  EXPECT_EQ(one["ids"], four["ids"]);
  EXPECT_FALSE(one.contains("execution"));
  ASSERT_TRUE(four.contains("execution"));
  EXPECT_GE(four["execution"]["stages"].get<int>(), 2);
  EXPECT_TRUE(four["execution"]["devices"][0].contains("busy_fraction"));
  EXPECT_TRUE(four["execution"]["devices"][0].contains("peak_bytes"));

  const std::string ppl = "perplexity " + model() + " --ids 3,14,15,92,65,35,89,79,32,38 --batch-tokens 4";
  EXPECT_EQ(run_json(ppl)["nll"], run_json(ppl + " --virtual-devices 2 --micro-batches 3")["nll"]);
}

// gpt-oss (issue 35): its sinks, router and expert biases travel with each layer's vectors and
// its transposed experts with the packed matrices: across virtual devices, streamed from host
// memory and from disk, the NLL is one device's to the last bit.
TEST_F(ExecCli, GptOssOnVirtualDevicesAndOffloadedMatchesOneDevice) {
  TempDir oss{"exec_cli_gpt_oss"};
  MakeModelOptions o;
  o.arch = Arch::kGptOss;
  o.dtype = DType::kF32;
  o.seed = 3;
  o.std = 0.08;
  o.vocab_size = 300;
  write_random_model(oss.path(), o);
  const std::string ppl = "perplexity " + shell_quote(oss.path()) + " --ids 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20 --batch-tokens 7";
  const Json one = run_json(ppl)["nll"];
  ASSERT_EQ(one.size(), 19u);
  EXPECT_EQ(run_json(ppl + " --virtual-devices 2 --micro-batches 2")["nll"], one);
  EXPECT_EQ(run_json(ppl + " --max-memory 0=3.5MiB,cpu=64GiB")["nll"], one);  // every layer streamed from the host
  EXPECT_EQ(run_json(ppl + " --max-memory 0=3.5MiB --offload-disk")["nll"], one);
}

// The whole model under each kernel table this CPU has (PLEXUS_ISA): the same generated ids and
// the same NLL to the last bit, with prefill (batches of 7 tokens) and decode both in play, for
// bf16 weights (converted in blocks for prefill) and f32 weights (read in place).
TEST_F(ExecCli, EveryIsaTableGivesTheSameTokensAndNll) {
  TempDir f32_dir{"exec_cli_f32"};
  MakeModelOptions o;
  o.seed = 6;
  o.std = 0.08;
  o.vocab_size = 1500;
  o.dtype = DType::kF32;
  write_random_model(f32_dir.path(), o);
  auto run_with = [](Isa isa, const std::string& args) {
    const testing::ProcessResult r = testing::run_command("env CUDA_VISIBLE_DEVICES= PLEXUS_ISA=" + std::string(isa_name(isa)) + " " +
                                                          shell_quote(PLEXUS_BINARY) + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;  // the table asked for was used
    return Json::parse(r.out);
  };
  for (const std::string& dir : {model(), shell_quote(f32_dir.path())}) {
    const std::string gen = "generate " + dir + " --ids 3,14,15,92,65,35,89,79,32 --max-tokens 8 --threads 2 --json";
    const std::string ppl = "perplexity " + dir + " --ids 3,14,15,92,65,35,89,79,32,38,46,26,43,38,32,79 --batch-tokens 7 --json";
    const Json gen_generic = run_with(Isa::kGeneric, gen), ppl_generic = run_with(Isa::kGeneric, ppl);
    EXPECT_EQ(gen_generic["isa"], "generic");
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      if (!isa_supported(isa)) continue;
      const Json g = run_with(isa, gen);
      EXPECT_EQ(g["isa"], std::string(isa_name(isa)));
      EXPECT_EQ(g["ids"], gen_generic["ids"]) << isa_name(isa) << " " << dir;
      EXPECT_EQ(run_with(isa, ppl)["nll"], ppl_generic["nll"]) << isa_name(isa) << " " << dir;
    }
  }
}

// The opt-in avx512bf16 table rounds activations to bf16 in prefill matmuls of bf16 weights: not
// bitwise, but every token's NLL stays within 0.02 of the exact tables' (seen: < 0.01 on `small`).
TEST_F(ExecCli, Avx512Bf16StaysNearTheExactTables) {
  if (!isa_supported(Isa::kAvx512Bf16)) GTEST_SKIP() << "no AVX512_BF16 here";
  const std::string ppl = "perplexity " + model() + " --ids 3,14,15,92,65,35,89,79,32,38,46,26,43,38,32,79 --batch-tokens 16 --json";
  auto nll = [&](const char* isa) {
    const testing::ProcessResult r =
        testing::run_command(std::string("env CUDA_VISIBLE_DEVICES= PLEXUS_ISA=") + isa + " " + shell_quote(PLEXUS_BINARY) + " " + ppl);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    return Json::parse(r.out)["nll"];
  };
  const Json exact = nll("generic"), rounded = nll("avx512bf16");
  ASSERT_EQ(exact.size(), rounded.size());
  ASSERT_GT(exact.size(), 0u);
  for (std::size_t i = 0; i < exact.size(); ++i) EXPECT_NEAR(rounded[i].get<double>(), exact[i].get<double>(), 0.02) << "token " << i;
}

TEST_F(ExecCli, AnUnknownIsaRequestFallsBackWithOneWarning) {
  const testing::ProcessResult r = testing::run_command("env CUDA_VISIBLE_DEVICES= PLEXUS_ISA=avx9000 " + shell_quote(PLEXUS_BINARY) +
                                                        " generate " + model() + " --ids 3,14,15 --max-tokens 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["isa"], std::string(isa_name(best_isa())));
  const std::string line = "warning: PLEXUS_ISA=avx9000 is unknown (generic|avx2|avx512|avx512bf16); using " + std::string(isa_name(best_isa()));
  const std::size_t at = r.err.find(line);
  EXPECT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("PLEXUS_ISA", at + line.size()), std::string::npos) << r.err;  // once
}

TEST_F(ExecCli, DeviceMapFileWithOffloadAndVerbosePlan) {
  const std::string map = dir_ / "map.json";
  std::ofstream(map) << R"({"model.embed_tokens": 0, "model.layers.0": 0, "model.layers.1": "cpu", "model.layers.2": 1, "model.layers.3": 1, "model.norm": 1, "lm_head": "disk"})";
  const std::string gen = "generate " + model() + " --ids 7,8,9 --max-tokens 4";
  const testing::ProcessResult r = run_plexus(gen + " --max-memory 0=64MiB,1=64MiB,cpu=64MiB --offload-disk --device-map " + shell_quote(map) + " --verbose --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["ids"], run_json(gen)["ids"]);
  EXPECT_NE(r.err.find("stage 0  device 0: embedding, layers 0-1 (1 streamed from cpu/disk)"), std::string::npos) << r.err;
  EXPECT_GT(Json::parse(r.out)["execution"]["streamed_bytes"].get<std::int64_t>(), 0);
}

TEST_F(ExecCli, BatchOfPromptsPipelines) {
  const Json j = run_json("generate " + model() + " --ids 1,2,3 --max-tokens 5 --virtual-devices 2 --batch 4");
  ASSERT_EQ(j["sequences"].size(), 4u);
  for (const Json& s : j["sequences"]) EXPECT_EQ(s["ids"], j["sequences"][0]["ids"]);
  EXPECT_EQ(j["execution"]["micro_batches"].get<int>(), 2);
}

// The defect of issue 14: what `plan` accepts, `perplexity` runs with the same flags (accelerate's
// strategies with cpu offload included); what `plan` refuses, the run refuses the same way.
TEST_F(ExecCli, PlanAcceptedRunsAndPlanRefusedDoesNotStart) {
  const std::string ppl = "perplexity " + model() + " --ids 3,14,15,92,65,35,89,79 --threads 2";
  const std::string want = Json::parse(run_plexus(ppl + " --json").out)["nll"].dump();
  for (const std::string strategy : {"auto", "sequential", "balanced_low_0", "stages"}) {
    const std::string flags = " --strategy " + strategy + " --max-memory 0=500KiB,cpu=4MiB --context 64 --batch-tokens 8";
    const testing::ProcessResult plan = run_plexus("plan " + model() + flags + " --threads 2 --json");
    ASSERT_EQ(plan.exit_code, 0) << strategy << ": " << plan.err;
    const Json d0 = Json::parse(plan.out)["devices"][0];
    EXPECT_EQ(d0["total_bytes"].get<std::int64_t>(), d0["weights_bytes"].get<std::int64_t>() + d0["run_buffers_bytes"].get<std::int64_t>());
    EXPECT_GT(d0["run_buffers_bytes"].get<std::int64_t>(), 0);
    const testing::ProcessResult r = run_plexus(ppl + flags + " --json");
    ASSERT_EQ(r.exit_code, 0) << strategy << ": " << r.err;
    EXPECT_EQ(Json::parse(r.out)["nll"].dump(), want) << strategy;
  }
  // The KV cache of a 2048-token context (2 MiB) outweighs the weights: stages spreads the layers'
  // caches over both devices (with the head handed back to device 0), and the run follows.
  const std::string kv = " --strategy stages --max-memory 0=1600KiB,1=1400KiB,cpu=8MiB --context 2048 --batch-tokens 8";
  const testing::ProcessResult kv_plan = run_plexus("plan " + model() + kv + " --threads 2");
  ASSERT_EQ(kv_plan.exit_code, 0) << kv_plan.err;
  EXPECT_NE(kv_plan.out.find("each accelerator computes one segment of layers"), std::string::npos) << kv_plan.out;
  const testing::ProcessResult kv_run = run_plexus(ppl + kv + " --json");
  ASSERT_EQ(kv_run.exit_code, 0) << kv_run.err;
  EXPECT_EQ(Json::parse(kv_run.out)["nll"].dump(), want);

  const std::string tight = " --strategy stages --max-memory 0=40KiB,cpu=4MiB --context 64 --batch-tokens 8";
  const testing::ProcessResult plan = run_plexus("plan " + model() + tight);
  EXPECT_EQ(plan.exit_code, 2) << plan.err;
  EXPECT_NE(plan.err.find("smallest budgets"), std::string::npos) << plan.err;
  const testing::ProcessResult r = run_plexus(ppl + tight);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
}

// Flags that contradict each other stop the command before it runs, naming both.
TEST_F(ExecCli, ContradictoryFlagsNameBoth) {
  const testing::ProcessResult b = run_plexus("plan " + model() + " --virtual-devices 2 --max-sequences 8 --batch-tokens 4");
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_NE(b.err.find("--max-sequences 8"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("--batch-tokens 4"), std::string::npos) << b.err;
  const testing::ProcessResult c = run_plexus("generate " + model() + " --ids 1,2 --max-tokens 40 --context 16 --virtual-devices 2");
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_NE(c.err.find("--max-tokens (40)"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("--context"), std::string::npos) << c.err;
  EXPECT_EQ(c.out, "");
  const testing::ProcessResult z = run_plexus("perplexity " + model() + " --ids 1,2,3 --context 0 --virtual-devices 2");
  EXPECT_EQ(z.exit_code, 2) << z.err;
  EXPECT_NE(z.err.find("--context 0"), std::string::npos) << z.err;
}

// A budget with room for one streaming slot but not two: the plan says so, the run streams
// through one slot (said with --verbose) and gives the same tokens.
TEST_F(ExecCli, OneStreamingSlotWhenTwoDoNotFit) {
  const std::string map = dir_ / "map.json";
  std::ofstream(map) << R"({"model.embed_tokens": 0, "model.layers.0": 0, "model.layers.1": "cpu", "model.layers.2": "cpu", "model.layers.3": "cpu", "model.norm": 0, "lm_head": 0})";
  const std::string common = " --device-map " + shell_quote(map) + " --context 32 --batch-tokens 8 --threads 2";
  const testing::ProcessResult roomy = run_plexus("plan " + model() + " --max-memory 0=64MiB,cpu=64MiB" + common + " --json");
  ASSERT_EQ(roomy.exit_code, 0) << roomy.err;
  const Json d0 = Json::parse(roomy.out)["devices"][0];
  ASSERT_EQ(d0["streaming_slots"].get<int>(), 2);
  const std::int64_t slot = d0["streaming_bytes"].get<std::int64_t>() / 2;
  const std::string tight = " --max-memory 0=" + std::to_string(d0["total_bytes"].get<std::int64_t>() - slot / 2) + ",cpu=64MiB" + common;
  const testing::ProcessResult plan = run_plexus("plan " + model() + tight + " --json");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(Json::parse(plan.out)["devices"][0]["streaming_slots"].get<int>(), 1);
  const std::string gen = "generate " + model() + " --ids 7,8,9 --max-tokens 4";
  const testing::ProcessResult r = run_plexus(gen + tight + " --verbose --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("one streaming slot: two do not fit"), std::string::npos) << r.err;
  EXPECT_EQ(Json::parse(r.out)["ids"], run_json(gen)["ids"]);
}

TEST_F(ExecCli, MapNamingAMissingDeviceIsBadInput) {
  const std::string map = dir_ / "map.json";
  std::ofstream(map) << R"({"": 3})";
  const testing::ProcessResult r = run_plexus("generate " + model() + " --ids 1,2 --virtual-devices 2 --device-map " + shell_quote(map));
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
}  // namespace plexus
