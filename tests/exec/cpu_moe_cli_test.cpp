// --cpu-moe and --n-cpu-moe through the real binary: the experts planned on "cpu" apart from their
// layers, the layers' devices holding attention and router only, the NLL bitwise one device's
// (Mixtral, Qwen3-MoE and gpt-oss, whose biases and sinks stay with the layer's device);
// a model that does not fit a device budget fits with them; bad values exit 2.
#include <gtest/gtest.h>

#include "core/json.h"
#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;
using testing::TempDir;

std::string write_moe(const TempDir& dir, Arch arch) {
  MakeModelOptions o;
  o.arch = arch;
  o.dtype = DType::kF32;
  o.seed = 7;
  o.std = 0.08;
  o.vocab_size = 1500;
  write_random_model(dir.path(), o);
  return shell_quote(dir.path());
}

Json run_json(const std::string& args) {
  const testing::ProcessResult r = run_plexus(args + " --json");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.exit_code == 0 ? Json::parse(r.out) : Json();
}

// The run's accelerators' peaks, summed (execution stats).
std::int64_t device_peak(const Json& run) {
  std::int64_t peak = 0;
  for (const Json& d : run["execution"]["devices"]) peak += d["peak_bytes"].get<std::int64_t>();
  return peak;
}

TEST(CpuMoe, ExpertsOnTheHostGiveOneDevicesNllBitwise) {
  for (const Arch arch : {Arch::kMixtral, Arch::kQwen3Moe, Arch::kGptOss}) {
    const TempDir dir{"cpu_moe"};
    const std::string model = write_moe(dir, arch);
    const std::string ppl = "perplexity " + model + " --ids 3,14,15,92,65,35,89,79,32,38,46,26 --batch-tokens 5";
    const Json one = run_json(ppl);
    const Json two = run_json(ppl + " --virtual-devices 2");
    const Json some = run_json(ppl + " --virtual-devices 2 --n-cpu-moe 2");
    const Json all = run_json(ppl + " --virtual-devices 2 --cpu-moe");
    const std::string what = std::string(arch_name(arch));
    EXPECT_EQ(one["nll"], two["nll"]) << what;
    EXPECT_EQ(one["nll"], some["nll"]) << what;
    EXPECT_EQ(one["nll"], all["nll"]) << what;
    // The devices hold less: the experts stay in the host's (mmapped) checkpoint.
    EXPECT_LT(device_peak(some), device_peak(two)) << what;
    EXPECT_LT(device_peak(all), device_peak(some)) << what;

    // The plan names the layers whose experts are on the CPU, apart from their layers (the tiny
    // Qwen3-MoE keeps layer 1 dense: mlp_only_layers; gpt-oss's experts are fused tensors).
    const bool mixtral = arch == Arch::kMixtral, all_sparse = arch != Arch::kQwen3Moe;
    const Json plan = run_json("plan " + model + " --virtual-devices 2 --n-cpu-moe 2");
    EXPECT_EQ(plan["experts_on_cpu"], all_sparse ? Json::array({0, 1}) : Json::array({0})) << what;
    const std::string experts = mixtral ? ".block_sparse_moe.experts" : ".mlp.experts";
    EXPECT_EQ(plan["device_map"].value("model.layers.0" + experts, Json()), "cpu") << plan["device_map"].dump();
    EXPECT_EQ(plan["device_map"].contains("model.layers.1" + experts), all_sparse) << plan["device_map"].dump();
    EXPECT_FALSE(plan["device_map"].contains("model.layers.2" + experts));
    const std::string first_expert = mixtral ? ".0.w1.weight" : arch == Arch::kGptOss ? ".gate_up_proj" : ".0.gate_proj.weight";
    EXPECT_EQ(plan["placement"].value("model.layers.0" + experts + first_expert, Json()), "cpu") << what;
    EXPECT_NE(plan["placement"]["model.layers.0.self_attn.q_proj.weight"], "cpu");
    // Qwen3-MoE's tiny preset keeps layer 1 dense (mlp_only_layers): --cpu-moe lists the others.
    const Json every = run_json("plan " + model + " --virtual-devices 2 --cpu-moe");
    EXPECT_EQ(every["experts_on_cpu"], all_sparse ? Json::array({0, 1, 2, 3}) : Json::array({0, 2, 3})) << what;
    EXPECT_LT(every["active_parameters"].get<std::int64_t>(), every["parameters"].get<std::int64_t>());
  }
}

// The experts' bytes count against cpu, not the device: a budget that cannot hold the model
// holds it with the experts on the host.
TEST(CpuMoe, FitsADeviceBudgetThatTheWholeModelDoesNot) {
  const TempDir dir{"cpu_moe_fit"};
  const std::string model = write_moe(dir, Arch::kMixtral);
  const Json whole = run_json("plan " + model + " --virtual-devices 1 --context 64");
  const std::int64_t needed = whole["devices"][0]["total_bytes"].get<std::int64_t>();
  const Json host = run_json("plan " + model + " --virtual-devices 1 --context 64 --cpu-moe");
  const std::int64_t without = host["devices"][0]["total_bytes"].get<std::int64_t>();
  ASSERT_LT(without, needed);
  const std::string budget = " --context 64 --max-memory 0=" + std::to_string((needed + without) / 2);
  const testing::ProcessResult no = run_plexus("plan " + model + budget);
  EXPECT_EQ(no.exit_code, 2) << no.out << no.err;
  const Json yes = run_json("plan " + model + budget + " --cpu-moe");
  EXPECT_EQ(yes["experts_on_cpu"], Json::array({0, 1, 2, 3}));
  const testing::ProcessResult cpu_small = run_plexus("plan " + model + budget + ",cpu=1000 --cpu-moe");
  EXPECT_EQ(cpu_small.exit_code, 2);
  EXPECT_NE(cpu_small.err.find("cpu's budget"), std::string::npos) << cpu_small.err;
}

TEST(CpuMoe, BadValuesExit2NamingWhy) {
  const TempDir moe_dir{"cpu_moe_bad"}, dense_dir{"cpu_moe_dense"};
  const std::string moe = write_moe(moe_dir, Arch::kMixtral);
  MakeModelOptions o;
  o.vocab_size = 1500;
  write_random_model(dense_dir.path(), o);
  const std::string dense = shell_quote(dense_dir.path());
  struct Case {
    std::string args, says;
  };
  for (const Case& c : {Case{"plan " + moe + " --virtual-devices 2 --n-cpu-moe 5", "--n-cpu-moe 5 is more than the model's 4 layers"},
                        Case{"perplexity " + moe + " --ids 1,2,3 --n-cpu-moe 9", "more than the model's 4 layers"},
                        Case{"perplexity " + moe + " --ids 1,2,3 --virtual-devices 2 --n-cpu-moe 9", "more than the model's 4 layers"},
                        Case{"plan " + dense + " --virtual-devices 2 --cpu-moe", "the model has no experts"},
                        Case{"perplexity " + dense + " --ids 1,2,3 --n-cpu-moe 1", "the model has no experts"},
                        Case{"generate " + dense + " --ids 1,2,3 --cpu-moe", "the model has no experts"},
                        Case{"plan " + moe + " --cpu-moe --n-cpu-moe 2", "give one of them"},
                        Case{"plan " + moe + " --n-cpu-moe -1", "--n-cpu-moe must be"}}) {
    const testing::ProcessResult r = run_plexus(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace plexus
