// `plexus plan` and `plexus estimate` as real processes: JSON shape, exit codes, messages.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json.h"
#include "test_util.h"

namespace {

struct ProcResult {
  int code = -1;
  std::string out;
};

// Runs `plexus ARGS` as a process; stdout, then stderr, in `out`.
ProcResult run(const std::string& args) {
  const plexus::testing::ProcessResult r = plexus::testing::run_plexus(args);
  return ProcResult{r.exit_code, r.out + r.err};
}

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("plexus_plan_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 576,
      "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
      "vocab_size": 49152, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string model() const { return dir_.string(); }
  std::filesystem::path dir_;
};

TEST_F(PlanCli, JsonHasTheDocumentedShape) {
  const ProcResult r = run("plan " + model() + " --strategy balanced --dtype f16 --max-memory 0=1GB,1=1GB,2=1GB,3=1GB,cpu=538MB --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const plexus::Json j = plexus::Json::parse(r.out);
  EXPECT_EQ(j["strategy"], "balanced");
  EXPECT_EQ(j["dtype"], "float16");
  EXPECT_EQ(j["device_map"]["model.embed_tokens"], 0);  // golden case 1000-33
  EXPECT_EQ(j["device_map"]["lm_head"], 0);
  EXPECT_EQ(j["placement"]["model.layers.29.mlp.down_proj.weight"], 3);
  ASSERT_TRUE(j["devices"].is_array());
  EXPECT_EQ(j["devices"][0]["device"], 0);
  EXPECT_TRUE(j["devices"][0].contains("budget_bytes"));
  EXPECT_TRUE(j["devices"][0].contains("weights_bytes"));
  EXPECT_TRUE(j["devices"][0].contains("kv_cache_bytes"));
  EXPECT_TRUE(j["devices"][0]["layers"].is_array());
}

TEST_F(PlanCli, TableAndCustomMapRoundTrip) {
  const ProcResult t = run("plan " + model() + " --virtual-devices 2");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("strategy stages"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("0-"), std::string::npos) << t.out;
  const ProcResult j = run("plan " + model() + " --max-memory 0=300MB,1=300MB --json");
  ASSERT_EQ(j.code, 0) << j.out;
  std::ofstream(dir_ / "map.json") << j.out;
  const ProcResult c = run("plan " + model() + " --max-memory 0=300MB,1=300MB --device-map " + (dir_ / "map.json").string());
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("strategy custom"), std::string::npos) << c.out;
  std::ofstream(dir_ / "bad.json") << R"({"model": 0})";
  const ProcResult b = run("plan " + model() + " --max-memory 0=200MB --device-map " + (dir_ / "bad.json").string());
  EXPECT_EQ(b.code, 2) << b.out;
  EXPECT_NE(b.out.find("lm_head.weight"), std::string::npos) << b.out;
}

TEST_F(PlanCli, ExitCodes) {
  EXPECT_EQ(run("plan " + model() + " --max-memory 0=banana").code, 2);
  EXPECT_EQ(run("plan " + model() + " --strategy quickest").code, 2);
  EXPECT_EQ(run("plan " + model() + " --dtype int3").code, 2);
  EXPECT_EQ(run("plan " + model() + " --max-memory 0=1GB --devices 1").code, 2);
  EXPECT_EQ(run("plan /nonexistent/model").code, 2);
  const ProcResult nofit = run("plan " + model() + " --max-memory 0=90MB,1=90MB --context 256");
  EXPECT_EQ(nofit.code, 2) << nofit.out;
  EXPECT_NE(nofit.out.find("needs"), std::string::npos) << nofit.out;
  EXPECT_EQ(run("plan " + model() + " --max-memory 0=90MB,1=90MB --context 256 --offload-disk").code, 0);
  // Too small for any plan: the run buffers alone (KV cache, scratch with every layer's f32 norms,
  // one streaming slot and the lm_head's) need more than device 0 has; exit 2 with the smallest
  // budgets that run.
  const ProcResult tiny = run("plan " + model() + " --max-memory 0=50MB,1=50MB --context 256 --offload-disk");
  EXPECT_EQ(tiny.code, 2) << tiny.out;
  EXPECT_NE(tiny.out.find("smallest budgets that run this model"), std::string::npos) << tiny.out;
  EXPECT_NE(tiny.out.find("--max-memory 0=81.81MiB;"), std::string::npos) << tiny.out;  // rounded up, pasteable
  // Pasted into the same request (device 1 keeps its budget: the devices split the threads, so the
  // scratch is that of two devices).
  EXPECT_EQ(run("plan " + model() + " --max-memory 0=81.81MiB,1=50MB --context 256 --offload-disk").code, 0);
  EXPECT_EQ(run("plan --help").code, 0);
}

// calibrate measures this host into $XDG_CACHE_HOME/plexus and says where; plan then predicts
// from it (or from a named GPU's datasheet with --gpu).
TEST_F(PlanCli, CalibrateThenPredict) {
  const std::string env = "XDG_CACHE_HOME=" + plexus::testing::shell_quote((dir_ / "cache").string()) + " " +
                          plexus::testing::shell_quote(PLEXUS_BINARY) + " ";
  const plexus::testing::ProcessResult uncal = plexus::testing::run_command(env + "plan " + model() + " --virtual-devices 2 --context 512 --json");
  ASSERT_EQ(uncal.exit_code, 0) << uncal.err;
  // Without a calibration file the host is measured briefly for the prediction, and the report says so.
  EXPECT_EQ(plexus::Json::parse(uncal.out)["predicted"]["facts"][0]["source"], "measured briefly now (no calibration file)");
  EXPECT_NE(plexus::Json::parse(uncal.out)["predicted"]["note"].get<std::string>().find("plexus calibrate"), std::string::npos) << uncal.out;
  const plexus::testing::ProcessResult half = plexus::testing::run_command(env + "calibrate --idle-w 10");
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_NE(half.err.find("--busy-w"), std::string::npos) << half.err;
  const plexus::testing::ProcessResult cal = plexus::testing::run_command(env + "calibrate --threads 1 --seconds 0.02 --idle-w 10 --busy-w 40");
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  const std::string file = (dir_ / "cache" / "plexus" / "calibration.json").string();
  EXPECT_NE(cal.out.find("wrote " + file), std::string::npos) << cal.out;
  ASSERT_TRUE(std::filesystem::exists(file));
  const plexus::testing::ProcessResult p = plexus::testing::run_command(env + "plan " + model() + " --virtual-devices 2 --context 512 --batch 4 --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const plexus::Json pred = plexus::Json::parse(p.out)["predicted"];
  for (const char* k : {"prefill_tokens_per_s", "seconds_to_first_token", "joules_per_token", "bottleneck", "facts"}) {
    EXPECT_TRUE(pred.contains(k)) << k;
  }
  EXPECT_GT(pred["decode_tokens_per_s"]["batch_1"].get<double>(), 0);
  EXPECT_GT(pred["decode_tokens_per_s"]["batch_4"].get<double>(), 0);
  EXPECT_NE(pred["facts"][0]["source"].get<std::string>().find("calibrated"), std::string::npos);
  // One host busy at 40 W for every decode step of 4 tokens.
  EXPECT_NEAR(pred["joules_per_token"].get<double>(), 40.0 / pred["decode_tokens_per_s"]["batch_4"].get<double>(), 1e-9);
  const ProcResult gpu = run("plan " + model() + " --max-memory 0=80GB --gpu h100-sxm --json");
  ASSERT_EQ(gpu.code, 0) << gpu.out;
  const plexus::Json g = plexus::Json::parse(gpu.out)["predicted"];
  EXPECT_EQ(g["facts"][0]["name"], "H100 SXM");
  EXPECT_EQ(g["bottleneck"]["resource"], "memory_bandwidth");
  EXPECT_TRUE(g["joules_per_token"].is_number());
  const ProcResult bad = run("plan " + model() + " --max-memory 0=80GB --gpu h100");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("h100-sxm"), std::string::npos) << bad.out;
}

// --strategy fastest plans every strategy on every device subset and keeps the best predicted,
// listing the runner-ups; --objective ranks by throughput, latency or energy.
TEST_F(PlanCli, FastestPicksTheBestPredictionAndShowsRunnerUps) {
  const ProcResult j = run("plan " + model() + " --max-memory 0=80GB,1=24GB --gpu h100-sxm --context 1024 --batch 8 --strategy fastest --json");
  ASSERT_EQ(j.code, 0) << j.out;
  const plexus::Json out = plexus::Json::parse(j.out);
  const plexus::Json& c = out["fastest"]["candidates"];
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(out["fastest"]["objective"], "throughput");
  for (std::size_t i = 1; i < c.size(); ++i) {
    EXPECT_GE(c[i - 1]["decode_tokens_per_s"].get<double>() * 1.005, c[i]["decode_tokens_per_s"].get<double>()) << i;
  }
  EXPECT_EQ(out["predicted"]["decode_tokens_per_s"]["batch_8"], c[0]["decode_tokens_per_s"]);
  const ProcResult e = run("plan " + model() + " --max-memory 0=80GB,1=24GB --gpu h100-sxm --context 1024 --strategy fastest --objective energy --json");
  ASSERT_EQ(e.code, 0) << e.out;
  const plexus::Json ec = plexus::Json::parse(e.out)["fastest"]["candidates"];  // a copy: the parsed document is a temporary
  for (std::size_t i = 1; i < ec.size(); ++i) {
    EXPECT_LE(ec[i - 1]["joules_per_token"].get<double>(), ec[i]["joules_per_token"].get<double>() * 1.005) << i;
  }
  const ProcResult t = run("plan " + model() + " --max-memory 0=80GB,1=24GB --gpu h100-sxm --context 1024 --strategy fastest --objective latency");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("fastest by latency"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("runner-ups:\n  2. "), std::string::npos) << t.out;
  const ProcResult both = run("plan " + model() + " --max-memory 0=80GB --objective energy");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.out.find("--objective energy"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find("--strategy"), std::string::npos) << both.out;
  EXPECT_EQ(run("plan " + model() + " --max-memory 0=80GB --strategy fastest --objective speed").code, 2);
}

// On a machine without GPUs a plain `plan` plans for the host: it computes the whole model from its
// own memory (nothing "did not fit the accelerators", nothing streams, the bottleneck is its memory
// bandwidth), and the text says each decode figure once, with the prompt its first token is for.
TEST_F(PlanCli, WithoutAcceleratorsPlansForTheHost) {
  const std::string env = "PLEXUS_NVML_LIBRARY=/nonexistent PLEXUS_ROCM_SMI_LIBRARY=/nonexistent PLEXUS_VIRTUAL_DEVICES= "
                          "CUDA_VISIBLE_DEVICES= XDG_CACHE_HOME=" + plexus::testing::shell_quote((dir_ / "cache").string()) + " " +
                          plexus::testing::shell_quote(PLEXUS_BINARY) + " ";
  const plexus::testing::ProcessResult r = plexus::testing::run_command(env + "plan " + model() + " --context 512");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("did not fit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no accelerators: the host computes the whole model (embedding, 30 layers, head)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bottleneck: device cpu, memory_bandwidth"), std::string::npos) << r.out;
  // One decode figure per batch and position, saying where: 256 tokens into a sequence and at its start.
  EXPECT_NE(r.out.find("tok/s (batch 1) 256 tokens into a sequence, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tok/s (batch 1) at its start; prefill"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(a 512-token prompt)"), std::string::npos) << r.out;
  const plexus::testing::ProcessResult j = plexus::testing::run_command(env + "plan " + model() + " --context 512 --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const plexus::Json p = plexus::Json::parse(j.out);
  EXPECT_EQ(p["devices"][0]["device"], "cpu");
  EXPECT_EQ(p["devices"][0]["streaming_bytes"], 0);
  EXPECT_EQ(p["predicted"]["bottleneck"]["resource"], "memory_bandwidth");
  EXPECT_EQ(p["predicted"]["decode_positions"], 256);
  EXPECT_GT(p["predicted"]["decode_tokens_per_s_at_start"]["batch_1"].get<double>(),
            p["predicted"]["decode_tokens_per_s"]["batch_1"].get<double>());  // no KV cache to read yet
}

// Plans predicted alike (the same figures on interchangeable virtual devices) share one runner-up line.
TEST_F(PlanCli, FastestGroupsRunnerUpsPredictedAlike) {
  const ProcResult r = run("plan " + model() + " --virtual-devices 4 --context 256 --strategy fastest");
  ASSERT_EQ(r.code, 0) << r.out;
  const plexus::Json j = plexus::Json::parse(run("plan " + model() + " --virtual-devices 4 --context 256 --strategy fastest --json").out);
  const std::size_t candidates = j["fastest"]["candidates"].size();
  std::size_t lines = 0;
  std::string seen;
  for (std::size_t at = r.out.find("\n  "); at != std::string::npos; at = r.out.find("\n  ", at + 1)) {
    const std::size_t end = r.out.find('\n', at + 1);
    const std::string line = r.out.substr(at + 1, end - at - 1);
    if (line.rfind("  …", 0) == 0) continue;  // "… N slower": not a runner-up line
    const std::string figures = line.substr(line.find(": decode") == std::string::npos ? 0 : line.find(": decode"));
    EXPECT_EQ(seen.find(figures + "\n"), std::string::npos) << "two lines alike: " << line << "\n" << r.out;
    seen += figures + "\n";
    ++lines;
  }
  EXPECT_GE(candidates, 10u);
  EXPECT_LE(lines, 6u) << r.out;  // at most six runner-up lines
  EXPECT_NE(r.out.find("more alike"), std::string::npos) << r.out;
}

// Budgets from detected GPUs (the fake NVML's four H100s): predicted from their datasheet entry.
TEST_F(PlanCli, DetectedGpusArePredictedAsWhatTheyAre) {
  const std::string env = "PLEXUS_NVML_LIBRARY=" + plexus::testing::shell_quote(FAKE_NVML_LIBRARY) +
                          " PLEXUS_FAKE_NVML_SCRIPT=" + plexus::testing::shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/backend/data/four_gpus.json") +
                          " PLEXUS_ROCM_SMI_LIBRARY=/nonexistent PLEXUS_VIRTUAL_DEVICES= CUDA_VISIBLE_DEVICES= " + plexus::testing::shell_quote(PLEXUS_BINARY) + " ";
  const plexus::testing::ProcessResult r = plexus::testing::run_command(env + "plan " + model() + " --devices 0,1 --context 1024 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const plexus::Json p = plexus::Json::parse(r.out)["predicted"];
  EXPECT_EQ(p["facts"][0]["name"], "H100 SXM (detected: NVIDIA H100 80GB HBM3)") << p.dump();
  EXPECT_EQ(p["facts"][0]["source"], "datasheet");
  EXPECT_TRUE(p["joules_per_token"].is_number());
}

TEST_F(PlanCli, Estimate) {
  const ProcResult r = run("estimate " + model() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const plexus::Json j = plexus::Json::parse(r.out);
  EXPECT_EQ(j["parameters"], 134515008);
  EXPECT_EQ(j["dtypes"].size(), 19u);  // float32 ... int4, then the 14 named mixes
  EXPECT_EQ(j["dtypes"][1]["dtype"], "bfloat16");
  EXPECT_EQ(j["dtypes"][11]["dtype"], "q4_k_m");
  EXPECT_EQ(j["dtypes"][1]["total_bytes"], 134515008LL * 2);
  const ProcResult t = run("estimate " + model());
  EXPECT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("int4"), std::string::npos);
}

}  // namespace

namespace {

// A real-shape mixture of experts from `make-model --config-only` (config.json, no weights):
// estimate gives its total and active parameters, as text and JSON; a dense model's are equal.
TEST_F(PlanCli, EstimateOfAMoePresetShowsActiveParameters) {
  const std::string out = (dir_ / "mixtral").string();
  const ProcResult made = run("make-model " + out + " --preset mixtral-8x7b --config-only");
  ASSERT_EQ(made.code, 0) << made.out;
  EXPECT_FALSE(std::filesystem::exists(out + "/model.safetensors"));
  const ProcResult j = run("estimate " + out + " --json --quantize q8_0");
  ASSERT_EQ(j.code, 0) << j.out;
  const plexus::Json e = plexus::Json::parse(j.out);
  EXPECT_EQ(e["architecture"], "MixtralForCausalLM");
  EXPECT_GT(e["parameters"].get<double>(), 46.6e9);
  EXPECT_LT(e["active_parameters"].get<double>(), 13.0e9);
  EXPECT_GT(e["active_parameters"].get<double>(), 12.8e9);
  EXPECT_LT(e["dtypes"][1]["active_bytes"].get<double>(), e["dtypes"][1]["total_bytes"].get<double>());
  const ProcResult t = run("estimate " + out + " --quantize q8_0");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("active per token"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("2 of 8 experts"), std::string::npos) << t.out;
  const plexus::Json dense = plexus::Json::parse(run("estimate " + model() + " --json --quantize q8_0").out);
  EXPECT_EQ(dense["active_parameters"], dense["parameters"]);
  const plexus::Json plan = plexus::Json::parse(run("plan " + model() + " --virtual-devices 2 --json").out);
  EXPECT_EQ(plan["active_parameters"], plan["parameters"]);
  EXPECT_EQ(plan["experts_on_cpu"], plexus::Json::array());
}

}  // namespace
