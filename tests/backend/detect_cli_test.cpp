// `plexus detect` and `plexus doctor` run as real processes against the fake NVML.
#include <gtest/gtest.h>

#include <string>

#include "core/json.h"
#include "test_util.h"

namespace plexus {

namespace {

// Runs plexus with `args`, NVML pointed at `library` scripted by `script`.
testing::ProcessResult run(const std::string& library, const std::string& script, const std::string& args,
                           const std::string& rocm_library = "/nonexistent/librocm_smi64.so") {
  const std::string data = std::string(PLEXUS_SOURCE_DIR) + "/tests/backend/data/";
  return testing::run_command("env -u PLEXUS_VIRTUAL_DEVICES -u PLEXUS_VIRTUAL_DEVICE_MEMORY -u PLEXUS_VIRTUAL_GPUS CUDA_VISIBLE_DEVICES= PLEXUS_NVML_LIBRARY=" +
                              testing::shell_quote(library) + " PLEXUS_FAKE_NVML_SCRIPT=" + testing::shell_quote(data + script) +
                              " PLEXUS_ROCM_SMI_LIBRARY=" + testing::shell_quote(rocm_library) + " " +
                              testing::shell_quote(PLEXUS_BINARY) + " " + args);
}

}  // namespace

TEST(DetectCli, AHungDriverIsLeftOutNotWaitedFor) {
  // Every NVML query of the GPU blocks for an hour: detect (and every run) hung before.
  const testing::ProcessResult timed = testing::run_command(
      "env -u PLEXUS_VIRTUAL_DEVICES CUDA_VISIBLE_DEVICES= PLEXUS_DRIVER_TIMEOUT_MS=300 PLEXUS_NVML_LIBRARY=" + testing::shell_quote(FAKE_NVML_LIBRARY) +
      " PLEXUS_FAKE_NVML_SCRIPT=" + testing::shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/backend/data/hung_gpu.json") +
      " PLEXUS_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so " + testing::shell_quote(PLEXUS_BINARY) + " detect --json");
  ASSERT_EQ(timed.exit_code, 0) << timed.err;
  const Json j = Json::parse(timed.out);
  EXPECT_NE(j["sources"]["nvml"].get<std::string>().find("NVML gave no answer within 300 ms"), std::string::npos) << timed.out;
  ASSERT_EQ(j["devices"].size(), 1u);  // the host only
  EXPECT_EQ(j["devices"][0]["index"], "cpu");
}

TEST(DetectCli, JsonListsGpusTopologyAndHost) {
  const testing::ProcessResult r = run(FAKE_NVML_LIBRARY, "four_gpus.json", "detect --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["devices"].size(), 5u);  // 4 GPUs + the host
  EXPECT_EQ(j["devices"][0]["index"], 0);
  EXPECT_EQ(j["devices"][0]["kind"], "cuda");
  EXPECT_EQ(j["devices"][0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["devices"][0]["memory_total_bytes"], 80ull << 30);
  EXPECT_EQ(j["devices"][0]["memory_free_bytes"], 79ull << 30);
  EXPECT_EQ(j["devices"][4]["index"], "cpu");
  EXPECT_EQ(j["devices"][4]["kind"], "cpu");
  EXPECT_EQ(j["topology"][0][1], "NV4");
  EXPECT_EQ(j["topology"][2][3], "PIX");
  EXPECT_TRUE(j["host"].contains("isa"));
  EXPECT_TRUE(j["host"]["cpu_kernels"] == "generic" || j["host"]["cpu_kernels"] == "avx2" || j["host"]["cpu_kernels"] == "avx512")
      << j["host"];
  EXPECT_NE(j["sources"]["nvml"].get<std::string>().find("ok"), std::string::npos);
}

TEST(DetectCli, TableShowsTopologyMatrix) {
  const testing::ProcessResult r = run(FAKE_NVML_LIBRARY, "four_gpus.json", "detect");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("NV4 (OK)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SYS (NS)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("79.00 GiB"), std::string::npos) << r.out;
}

TEST(DetectCli, LibraryWithoutSomeSymbolsGivesNulls) {
  const testing::ProcessResult r = run(FAKE_NVML_MINIMAL_LIBRARY, "four_gpus.json", "detect --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Json j = Json::parse(r.out);
  EXPECT_TRUE(j["devices"][0]["compute_capability"].is_null());
  EXPECT_TRUE(j["devices"][0]["temperature_c"].is_null());
  EXPECT_EQ(j["devices"][0]["memory_total_bytes"], 80ull << 30);
  EXPECT_EQ(j["topology"][0][1], "?");
}

TEST(DetectCli, NoLibraryMeansNoGpusButStillSucceeds) {
  const testing::ProcessResult r = run("/nonexistent/libnvidia-ml.so.1", "four_gpus.json", "detect --json");
  ASSERT_EQ(r.exit_code, 0);
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["devices"].size(), 1u);
  EXPECT_EQ(j["devices"][0]["kind"], "cpu");
  EXPECT_NE(j["sources"]["nvml"].get<std::string>().find("unavailable"), std::string::npos);
  const testing::ProcessResult v = run("/nonexistent/libnvidia-ml.so.1", "four_gpus.json", "detect --json --virtual-devices 3");
  const Json jv = Json::parse(v.out);
  ASSERT_EQ(jv["devices"].size(), 4u);
  EXPECT_EQ(jv["devices"][2]["kind"], "virtual");
}

TEST(DetectCli, AmdGpusFollowNvidiaOnes) {
  const testing::ProcessResult r = run(FAKE_NVML_LIBRARY, "lost_gpu.json", "detect --json", FAKE_ROCM_SMI_LIBRARY);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["devices"].size(), 5u);  // 2 NVIDIA + 2 AMD + the host
  EXPECT_EQ(j["devices"][2]["index"], 2);
  EXPECT_EQ(j["devices"][2]["kind"], "rocm");
  EXPECT_EQ(j["devices"][2]["name"], "AMD Instinct MI300X");
  EXPECT_EQ(j["devices"][3]["uuid"], "00000000abcd0001");
  EXPECT_EQ(j["devices"][2]["memory_total_bytes"], 192ull << 30);
  EXPECT_EQ(j["devices"][2]["memory_free_bytes"], 184ull << 30);
  EXPECT_DOUBLE_EQ(j["devices"][2]["power_limit_w"].get<double>(), 750.0);
  EXPECT_DOUBLE_EQ(j["devices"][2]["temperature_c"].get<double>(), 45.0);
  EXPECT_EQ(j["topology"][2][3], "XGMI");
  EXPECT_EQ(j["topology"][0][1], "PIX");
  EXPECT_EQ(j["topology"][0][2], "SYS");
  EXPECT_EQ(j["p2p"][2][3], "OK");
  EXPECT_EQ(j["p2p"][1][3], "NS");
  EXPECT_NE(j["sources"]["rocm_smi"].get<std::string>().find("ok"), std::string::npos);
}

TEST(DoctorCli, ExitCodesGateCi) {
  const testing::ProcessResult ready = run(FAKE_NVML_LIBRARY, "four_gpus.json", "doctor --devices 0,1");
  EXPECT_EQ(ready.exit_code, 0) << ready.out;
  EXPECT_NE(ready.out.find("--devices 0,1 --max-memory \"0=71GiB,1=71GiB\""), std::string::npos) << ready.out;
  EXPECT_NE(ready.out.find("max_memory: {0: 71GiB, 1: 71GiB}"), std::string::npos) << ready.out;

  const testing::ProcessResult warn = run(FAKE_NVML_LIBRARY, "four_gpus.json", "doctor --devices 0,2 --json");
  EXPECT_EQ(warn.exit_code, 0) << warn.out;
  const Json jw = Json::parse(warn.out);
  EXPECT_EQ(jw["devices"][1]["verdict"], "warning");

  const testing::ProcessResult bad = run(FAKE_NVML_LIBRARY, "four_gpus.json", "doctor --devices 0,1,2,3,4 --json");
  EXPECT_EQ(bad.exit_code, 1);
  const Json jb = Json::parse(bad.out);
  EXPECT_EQ(jb["devices"][3]["verdict"], "unusable");
  EXPECT_EQ(jb["devices"][4]["verdict"], "missing");
  EXPECT_FALSE(jb["ok"].get<bool>());

  const testing::ProcessResult lost = run(FAKE_NVML_LIBRARY, "lost_gpu.json", "doctor --json");
  EXPECT_EQ(lost.exit_code, 1);
  EXPECT_EQ(Json::parse(lost.out)["devices"][1]["verdict"], "unusable");

  EXPECT_EQ(run(FAKE_NVML_LIBRARY, "four_gpus.json", "doctor --devices zero").exit_code, 2);
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, "four_gpus.json", "doctor --bogus").exit_code, 2);
  EXPECT_EQ(run("/nonexistent/lib.so", "four_gpus.json", "doctor --devices 0").exit_code, 1);
  EXPECT_EQ(run("/nonexistent/lib.so", "four_gpus.json", "doctor --devices 0,1 --virtual-devices 2").exit_code, 0);
}

TEST(DetectCli, PlanWithoutMaxMemoryBudgetsTheDetectedGpus) {
  // A config.json alone is enough to plan; the budgets come from what NVML reports free.
  const std::string config = ::testing::TempDir() + "/plexus_plan_detect_config.json";
  {
    FILE* f = std::fopen(config.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 576, "num_hidden_layers": 30,
                  "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
                  "vocab_size": 32000, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})",
               f);
    std::fclose(f);
  }
  const testing::ProcessResult r = run(FAKE_NVML_LIBRARY, "four_gpus.json", "plan " + config + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Json j = Json::parse(r.out);
  EXPECT_NE(j["budgets_source"].get<std::string>().find("detected"), std::string::npos);
  int accelerators = 0;
  for (const Json& d : j["devices"]) {
    if (d["device"] == 0) {
      // four_gpus.json: GPU 0 has 81920 MiB with 1024 MiB used.
      EXPECT_EQ(d["budget_bytes"].get<std::uint64_t>(), (81920ull - 1024ull) << 20);
    }
    if (d["device"].is_number_integer()) ++accelerators;
  }
  EXPECT_GE(accelerators, 1);
  std::remove(config.c_str());
}

}  // namespace plexus
