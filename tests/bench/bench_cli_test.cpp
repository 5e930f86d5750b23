// `plexus bench` as a process on a tiny model: 4 virtual devices end to end (JSON keys, CSV rows
// appended, HTML), GPU statistics through the fake NVML, sweeps, compare, model_make, bad configs.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "bench/csv_writer.h"
#include "core/json.h"
#include "core/mmap_file.h"
#include "durability_util.h"
#include "test_util.h"

namespace plexus {
namespace {

namespace fs = std::filesystem;
using testing::run_plexus;
using testing::shell_quote;

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

class BenchCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>("bench-cli");
    model_ = *dir_ / "tiny";
    const auto r = run_plexus("make-model " + shell_quote(model_) + " --preset tiny --seed 3 --tokenizer " +
                              shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { dir_.reset(); }
  void SetUp() override {
    ::setenv("PLEXUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    ::setenv("PLEXUS_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so", 1);
    ::unsetenv("PLEXUS_VIRTUAL_DEVICES");
  }
  // Writes `yaml` to a fresh file; returns its path.
  std::string config(const std::string& name, const std::string& yaml) {
    const std::string path = work_.path() + "/" + name;
    std::ofstream(path) << yaml;
    return path;
  }
  std::string out() const { return work_ / "results"; }

  static std::unique_ptr<testing::TempDir> dir_;
  static std::string model_;
  testing::TempDir work_{"bench-cli-run"};
};
std::unique_ptr<testing::TempDir> BenchCli::dir_;
std::string BenchCli::model_;

TEST_F(BenchCli, FourVirtualDevicesEndToEnd) {
  const std::string cfg = config("tour.yaml", "name: tour\nmodel: " + model_ +
                                                  "\nbackend:\n  virtual_devices: 4\n  device_map: stages\n"
                                                  "scenario:\n  prompts: [\"Hello world\", \"The capital of France is\"]\n"
                                                  "  num_samples: 4\n  batch_size: 2\n  max_new_tokens: 4\n"
                                                  "monitor: {interval_ms: 10}\noutput: {dir: " + out() + "}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("HTML report: " + out() + "/tour.html"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output tok/s"), std::string::npos);

  const Json j = read_json_file(out() + "/tour.json");
  for (const char* k : {"name", "config", "sweep_point", "throughput", "latency", "energy", "gpu_stats", "host_stats", "aggregates",
                        "plan", "execution", "environment", "timestamp"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["name"], "tour");
  EXPECT_EQ(j["config"]["device_ids"], Json::array({0, 1, 2, 3}));
  EXPECT_EQ(j["config"]["backend"]["virtual_devices"], 4);
  EXPECT_EQ(j["config"]["scenario"]["batch_size"], 2);
  EXPECT_EQ(j["sweep_point"], Json::object());
  for (const char* k : {"tokens_per_s", "total_tokens_per_s", "samples_per_s"}) EXPECT_TRUE(j["throughput"][k].is_number()) << k;
  EXPECT_EQ(j["throughput"]["output_tokens"], 16);  // 4 samples × 4 tokens, end-of-sequence ignored
  EXPECT_EQ(j["throughput"]["samples"], 4);
  // 2 batches of 2 samples × 4 tokens: the first token of each comes from prefill, 3 decode steps each.
  EXPECT_EQ(j["throughput"]["decode_steps"], 6);
  EXPECT_GE(j["throughput"]["host_ms_per_step"].get<double>(), 0.0);
  for (const char* k : {"ttft_ms", "tpot_ms", "e2e_ms"}) {
    for (const char* p : {"p50", "p90", "p99", "mean"}) EXPECT_TRUE(j["latency"][k][p].is_number()) << k << "." << p;
    EXPECT_EQ(j["latency"][k]["count"], 4);
  }
  EXPECT_LE(j["latency"]["ttft_ms"]["p50"].get<double>(), j["latency"]["e2e_ms"]["p50"].get<double>());
  for (const char* k : {"total_j", "j_per_token", "tokens_per_j", "method", "above_idle_j"}) EXPECT_TRUE(j["energy"].contains(k)) << k;
  for (const char* k : {"attributed_j", "attributed_s", "j_per_token_attributed", "avg_utilization_percent", "idle_power_w"}) {
    EXPECT_TRUE(j["energy"].contains(k)) << k;
  }
  if (j["energy"]["method"] == "unavailable") {
    for (const char* k : {"total_j", "j_per_token", "attributed_j", "j_per_token_attributed", "idle_power_w"}) {
      EXPECT_TRUE(j["energy"][k].is_null()) << k;  // never invented
    }
  }
  EXPECT_EQ(j["gpu_stats"], Json::object());  // virtual devices are not GPUs
  EXPECT_TRUE(j["host_stats"].is_object());
  EXPECT_TRUE(j["aggregates"].contains("total_avg_utilization"));
  EXPECT_EQ(j["plan"]["device_map"]["model.embed_tokens"], 0);
  int accelerators = 0;
  for (const Json& d : j["execution"]["devices"]) accelerators += d["device"].is_number_integer();
  EXPECT_EQ(accelerators, 4);  // + the host
  EXPECT_GE(j["execution"]["stages"].get<int>(), 1);
  for (const char* k : {"cpu", "gpus", "driver", "plexus_version", "plexus_commit", "hostname"}) {
    EXPECT_TRUE(j["environment"].contains(k)) << k;
  }

  const std::string csv = read_text_file_or_empty(out() + "/tour.csv");
  EXPECT_EQ(lines(csv), 2);
  const std::string header = csv.substr(0, csv.find('\n'));
  for (const char* col : {"throughput_tokens_per_s", "latency_ttft_ms_p50", "config_device_ids", "energy_method"}) {
    EXPECT_NE(header.find(col), std::string::npos) << col;
  }
  EXPECT_NE(csv.find("\"0,1,2,3\""), std::string::npos);
  EXPECT_EQ(j.value("status", ""), "ok");
  EXPECT_EQ(j.value("interrupted", true), false);
  ASSERT_TRUE(j.contains("device_timeline") && j["device_timeline"].is_object());
  EXPECT_GE(j["device_timeline"]["t_s"].size(), 2u);  // the start and the end at least (DeviceTimelineCoversTheRun)
  EXPECT_TRUE(j["device_timeline"]["devices"].contains("virtual:0")) << j["device_timeline"].dump();
  EXPECT_EQ(header.rfind("name,engine,throughput_tokens_per_s,", 0), 0u) << header;
  EXPECT_EQ(j.value("engine", ""), "plexus");  // every result names its engine
  const std::string html = read_text_file_or_empty(out() + "/tour.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  for (const char* s : {"batch size <b>2</b>", "devices <b>0,1,2,3</b>", "virtual:0 busy", "Memory in use per device",
                        "End-to-end latency per request", "TPOT ms<br>p50 / p99"}) {
    EXPECT_NE(html.find(s), std::string::npos) << s;
  }
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);

  // A second run appends one row to the same CSV.
  const auto again = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(lines(read_text_file_or_empty(out() + "/tour.csv")), 3);
}

// The executor's counters are sampled between forward passes at the monitor's interval, not only
// after each batch: the busy and memory lines cover the run (here 2 batches of 64 forwards each,
// sampled every millisecond). Without a power source the energy says why it is unavailable.
TEST_F(BenchCli, DeviceTimelineCoversTheRun) {
  const std::string cfg = config("t.yaml", "name: t\nmodel: " + model_ +
                                               "\nbackend:\n  virtual_devices: 2\n  device_map: stages\n"
                                               "scenario:\n  prompts: [\"Hello world\"]\n  num_samples: 4\n  batch_size: 2\n"
                                               "  max_new_tokens: 64\n  ignore_eos: true\n  warmup_samples: 0\n"
                                               "monitor: {interval_ms: 1}\noutput: {dir: " + out() + ", formats: [json]}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = read_json_file(out() + "/t.json");
  const Json& t = j["device_timeline"]["t_s"];
  EXPECT_GT(t.size(), 6u) << j["device_timeline"].dump();  // after each of 2 batches alone: 3
  ASSERT_TRUE(j["device_timeline"]["devices"].contains("virtual:1")) << j["device_timeline"].dump();
  EXPECT_EQ(j["device_timeline"]["devices"]["virtual:1"]["busy_fraction"].size(), t.size());
  EXPECT_FALSE(j["device_timeline"]["devices"].contains("cpu")) << "the host computes nothing here";
  if (j["energy"]["method"] == "unavailable") {
    EXPECT_NE(j["energy"]["note"].get<std::string>().find("no power source on this host"), std::string::npos) << j["energy"].dump();
  }
}

TEST_F(BenchCli, GpuStatsFromTheFakeNvml) {
  ::setenv("PLEXUS_NVML_LIBRARY", FAKE_NVML_LIBRARY, 1);
  ::setenv("PLEXUS_FAKE_NVML_SCRIPT", (std::string(PLEXUS_SOURCE_DIR) + "/tests/monitor/data/two_gpus_ramp.json").c_str(), 1);
  const std::string cfg = config("gpu.yaml", "name: gpu\nmodel: " + model_ +
                                                 "\nbackend: {device_ids: [0, 1]}\n"
                                                 "scenario: {prompts_ids: [[1, 415, 5565]], num_samples: 2, max_new_tokens: 3}\n"
                                                 "monitor: {interval_ms: 10}\noutput: {dir: " + out() + ", formats: [json, csv]}\n");
  // NVML shows two GPUs, the CUDA runtime (without a GPU here) none: they run as virtual CPU devices.
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --allow-cpu-devices");
  ::setenv("PLEXUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = read_json_file(out() + "/gpu.json");
  const Json& g = j["gpu_stats"];
  ASSERT_EQ(g.size(), 2u) << g.dump();
  EXPECT_DOUBLE_EQ(g["gpu_0"]["utilization_percent"], 30);  // the script's constants
  EXPECT_DOUBLE_EQ(g["gpu_1"]["utilization_percent"], 70);
  EXPECT_DOUBLE_EQ(g["gpu_0"]["memory_used_mb"], 1024);
  EXPECT_DOUBLE_EQ(g["gpu_0"]["memory_total_mb"], 16384);
  EXPECT_DOUBLE_EQ(g["gpu_0"]["memory_percent"], 6.25);
  EXPECT_DOUBLE_EQ(g["gpu_0"]["temperature_c"], 55);
  EXPECT_DOUBLE_EQ(g["gpu_0"]["power_draw_w"], 150);
  EXPECT_GE(g["gpu_1"]["power_draw_w"].get<double>(), 200);  // ramps up from 200 W
  EXPECT_EQ(j["energy"]["devices"]["gpu_0"]["method"], "counter");
  EXPECT_GT(j["energy"]["gpu_j"].get<double>(), 0);
  EXPECT_GT(j["energy"]["j_per_token"].get<double>(), 0);
  EXPECT_NEAR(j["energy"]["tokens_per_j"].get<double>() * j["energy"]["j_per_token"].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(j["config"]["device_ids"], Json::array({0, 1}));
  EXPECT_EQ(j["environment"]["driver"], "550.54.15");
  EXPECT_EQ(j["environment"]["gpus"].size(), 2u);
  EXPECT_EQ(j["aggregates"]["any_gpu_active"], true);
  const std::string header = bench::read_csv_header(out() + "/gpu.csv");
  for (const char* col : {"gpu_stats_gpu_0_utilization_percent", "gpu_stats_gpu_1_power_draw_w", "gpu_stats_gpu_0_memory_percent"}) {
    EXPECT_NE(header.find(col), std::string::npos) << col;
  }
  EXPECT_FALSE(fs::exists(out() + "/gpu.html"));  // not among the formats
}

// Issue 33, "energy that tells the truth", on the fake NVML (one GPU of constant, known power and
// utilisation): the idle power measured before the load (by default: 5 sampling intervals), the
// whole run's energy from the counter, the average power and utilisation during the load, and
// J/token over the whole load next to J/token of the forward passes alone (the energy attributed
// to requests).
TEST_F(BenchCli, EnergyOfTheLoadFromTheFakeGpu) {
  constexpr double kWatts = 150, kUtilization = 37, kIntervalS = 0.01;
  // A counter is read a moment after its sample's time (the sources are read one after another):
  // at most about a sampling interval late at each end, as in serve's energy test.
  constexpr double kSlack = 2 * kIntervalS * kWatts;
  const std::string script = work_ / "gpu.json";
  std::ofstream(script) << R"({"devices": [{"name": "Fake H100", "power_w": 150, "utilization": 37,
                               "memory_total_mb": 81920, "memory_used_mb": 1024}]})";
  auto bench = [&](const char* library, const std::string& name) {
    ::setenv("PLEXUS_NVML_LIBRARY", library, 1);
    ::setenv("PLEXUS_FAKE_NVML_SCRIPT", script.c_str(), 1);
    const std::string cfg = config(name + ".yaml", "name: " + name + "\nmodel: " + model_ +
                                                       "\nbackend: {device_ids: [0]}\n"
                                                       "scenario: {prompts_ids: [[1, 415, 5565]], num_samples: 4, batch_size: 2, "
                                                       "max_new_tokens: 24, ignore_eos: true}\n"
                                                       "monitor: {interval_ms: 10}\noutput: {dir: " + out() + ", formats: [json, csv]}\n");
    const auto r = run_plexus("bench " + shell_quote(cfg) + " --allow-cpu-devices");
    ::setenv("PLEXUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_json_file(out() + "/" + name + ".json");
  };
  const Json j = bench(FAKE_NVML_LIBRARY, "load");
  const Json& e = j["energy"];
  const Json& gpu = e["devices"]["gpu_0"];
  // Idle before the load: measured by default, over 5 sampling intervals.
  EXPECT_NEAR(e["idle_baseline_s"].get<double>(), 0.05, 1e-9) << e.dump();
  EXPECT_NEAR(gpu["idle_power_w"].get<double>(), kWatts, 0.01) << e.dump();
  // The whole run from the counter, its average power and utilisation.
  EXPECT_EQ(gpu["method"], "counter") << e.dump();
  const double duration = e["duration_s"].get<double>();
  EXPECT_NEAR(gpu["energy_j"].get<double>(), kWatts * duration, kSlack) << e.dump();
  EXPECT_NEAR(gpu["avg_power_w"].get<double>(), kWatts, 0.01) << e.dump();  // the readings' power
  EXPECT_DOUBLE_EQ(gpu["utilization_percent"].get<double>(), kUtilization) << e.dump();
  EXPECT_DOUBLE_EQ(e["avg_utilization_percent"].get<double>(), kUtilization) << e.dump();
  // The forward passes lie inside the load: their energy is part of the whole run's.
  const double tokens = j["throughput"]["output_tokens"].get<double>();
  ASSERT_EQ(tokens, 96);
  const double forward_s = e["attributed_s"].get<double>();
  EXPECT_GT(forward_s, 0) << e.dump();
  EXPECT_LE(forward_s, duration) << e.dump();
  const double attributed = e["attributed_j"].get<double>();
  EXPECT_GT(attributed, 0) << e.dump();
  EXPECT_LE(attributed, e["total_j"].get<double>() + kSlack) << e.dump();
  EXPECT_NEAR(e["j_per_token_attributed"].get<double>(), attributed / tokens, 1e-12) << e.dump();
  EXPECT_NEAR(e["j_per_token"].get<double>(), e["total_j"].get<double>() / tokens, 1e-12) << e.dump();
  const std::string header = bench::read_csv_header(out() + "/load.csv");
  for (const char* col : {"energy_attributed_j", "energy_j_per_token_attributed", "energy_avg_utilization_percent",
                          "energy_idle_power_w"}) {
    EXPECT_NE(header.find(col), std::string::npos) << col;
  }

  // The same GPU reporting power only (the minimal fake has no energy counter): the energy is power
  // integrated over the samples' times, so the forward passes' energy is exactly the constant
  // power × their time, and the run's the power × its duration.
  const Json p = bench(FAKE_NVML_MINIMAL_LIBRARY, "power");
  const Json& pe = p["energy"];
  EXPECT_EQ(pe["devices"]["gpu_0"]["method"], "power-integration") << pe.dump();
  EXPECT_NEAR(pe["devices"]["gpu_0"]["idle_power_w"].get<double>(), kWatts, 1e-9) << pe.dump();
  EXPECT_NEAR(pe["devices"]["gpu_0"]["energy_j"].get<double>(), kWatts * pe["duration_s"].get<double>(), 1e-9) << pe.dump();
  if (pe["devices"]["cpu"]["energy_j"].is_null()) {  // the fake GPU alone reports energy
    EXPECT_NEAR(pe["attributed_j"].get<double>(), kWatts * pe["attributed_s"].get<double>(), 1e-9) << pe.dump();
  }
  EXPECT_GT(pe["attributed_s"].get<double>(), 0) << pe.dump();
}

// A configuration naming GPUs on a host where CUDA sees none does not quietly run on the CPU: exit 2
// at the key's line, naming what was found, before anything runs or is written; --allow-cpu-devices
// runs it on virtual CPU devices after a warning.
TEST_F(BenchCli, GpusAskedForWhereThereAreNoneExitTwo) {
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const std::string yaml = "name: gpus\nmodel: " + model_ +
                           "\nbackend:\n  device_ids: [0, 1]\n  max_memory: {0: 1GiB, 1: 1GiB, cpu: 4GiB}\n"
                           "scenario: {prompts_ids: [[1, 415]], num_samples: 1, max_new_tokens: 2, warmup_samples: 0}\n"
                           "output: {dir: " + out() + "}\n";
  const std::string cfg = config("gpus.yaml", yaml);
  const auto strict = run_plexus("bench " + shell_quote(cfg));
  EXPECT_EQ(strict.exit_code, 2) << strict.err;
  for (const char* s : {"gpus.yaml:4: backend.device_ids [0, 1] asks for GPUs, but this host has no GPU and CUDA is unavailable",
                        "--allow-cpu-devices", "backend.virtual_devices"}) {
    EXPECT_NE(strict.err.find(s), std::string::npos) << s << "\n" << strict.err;
  }
  EXPECT_FALSE(fs::exists(out())) << "nothing is written";
  // The repository's own GPU example says the same on this host.
  const auto example = testing::run_command("cd " + shell_quote(PLEXUS_SOURCE_DIR) + " && " + shell_quote(PLEXUS_BINARY) +
                                            " bench configs/gpu.yaml --output-dir " + shell_quote(out()));
  EXPECT_EQ(example.exit_code, 2) << example.err;
  EXPECT_NE(example.err.find("configs/gpu.yaml:11: backend.device_ids [0, 1] asks for GPUs"), std::string::npos) << example.err;
  EXPECT_FALSE(fs::exists(out())) << "nothing is written";
  // Allowed: a warning, then the run.
  const auto allowed = run_plexus("bench " + shell_quote(cfg) + " --allow-cpu-devices");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_NE(allowed.err.find("plexus bench: warning: backend.device_ids [0, 1] asks for GPUs"), std::string::npos) << allowed.err;
  EXPECT_NE(allowed.err.find("running on 2 virtual CPU devices"), std::string::npos) << allowed.err;
}

// Without backend.max_memory and without a GPU the driver's library reports, --allow-cpu-devices
// used to warn "running on 2 virtual CPU devices" and then fail ("--devices: device 0 does not
// exist"): the devices share the host's available memory, as backend.virtual_devices would.
TEST_F(BenchCli, AllowCpuDevicesWithoutBudgetsRunsOnVirtualDevices) {
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const std::string cfg = config("nobudget.yaml", "name: nobudget\nmodel: " + model_ +
                                                      "\nbackend: {device_ids: [0, 1]}\n"
                                                      "scenario: {prompts_ids: [[1, 415]], num_samples: 1, max_new_tokens: 2, warmup_samples: 0}\n"
                                                      "sweep: {scenario.max_tokens: [1, 2]}\n"
                                                      "output: {dir: " + out() + ", formats: [json]}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --allow-cpu-devices --quiet");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string warning = "plexus bench: warning: backend.device_ids [0, 1] asks for GPUs, but this host has no GPU";
  ASSERT_NE(r.err.find(warning), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning, r.err.find(warning) + 1), std::string::npos) << "one warning for the two points\n" << r.err;
  EXPECT_NE(r.err.find("running on 2 virtual CPU devices that share the host's available memory (backend.virtual_devices: 2) instead"),
            std::string::npos)
      << r.err;
  const Json j = read_json_file(out() + "/nobudget.json");
  ASSERT_EQ(j["runs"].size(), 2u) << j.dump();
  for (const Json& run : j["runs"]) {
    EXPECT_EQ(run["status"], "ok") << run.dump();
    EXPECT_EQ(run["config"]["backend"]["virtual_devices"], 2) << run["config"].dump();
  }
}

TEST_F(BenchCli, SweepWritesOneResultPerPointAndCompareReadsThem) {
  const std::string cfg = config("sw.yaml", "name: sw\nmodel: " + model_ +
                                                "\nbackend: {virtual_devices: 2}\n"
                                                "scenario: {prompts_ids: [[1, 415], [1, 5565, 302]], max_new_tokens: 3, warmup_samples: 0}\n"
                                                "sweep:\n  scenario.batch_size: [1, 2]\n"
                                                "output: {dir: " + out() + "}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --set scenario.max_new_tokens=2 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json s = read_json_file(out() + "/sw.json");
  ASSERT_EQ(s["runs"].size(), 2u);
  EXPECT_EQ(s["sweep"]["scenario.batch_size"], Json::array({1, 2}));
  for (int i = 0; i < 2; ++i) {
    const Json p = read_json_file(out() + "/sw-" + std::to_string(i) + ".json");
    EXPECT_EQ(p["sweep_point"]["scenario.batch_size"], i + 1);
    EXPECT_EQ(p["config"]["scenario"]["batch_size"], i + 1);
    EXPECT_EQ(p["config"]["scenario"]["max_new_tokens"], 2);  // --set
    EXPECT_EQ(p["throughput"]["output_tokens"], 4);
  }
  EXPECT_EQ(lines(read_text_file_or_empty(out() + "/sw.csv")), 3);
  const std::string html = read_text_file_or_empty(out() + "/sw.html");
  EXPECT_NE(html.find("Output throughput per point"), std::string::npos);

  const auto c = run_plexus("bench compare " + shell_quote(out() + "/sw-0.json") + " " + shell_quote(out() + "/sw-1.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("throughput.tokens_per_s"), std::string::npos);
  EXPECT_NE(c.out.find("sw-1.json"), std::string::npos);
  const auto cj = run_plexus("bench compare --json " + shell_quote(out() + "/sw.json") + " " + shell_quote(out() + "/sw-0.json"));
  ASSERT_EQ(cj.exit_code, 0) << cj.err;
  const Json cmp = parse_json(cj.out, "compare --json");
  EXPECT_EQ(cmp["columns"], Json::array({"sw.json#0", "sw.json#1", "sw-0.json"}));
  EXPECT_EQ(run_plexus("bench compare " + shell_quote(out() + "/sw-0.json") + " " + shell_quote(out() + "/nope.json")).exit_code, 2);
}

TEST_F(BenchCli, TensorParallelPointsReportTheirCommunication) {
  const std::string cfg = config("tp.yaml", "name: tp\nmodel: " + model_ +
                                                "\nbackend: {threads: 2}\n"
                                                "scenario: {prompts_ids: [[1, 415], [1, 5565, 302]], max_new_tokens: 3, warmup_samples: 0}\n"
                                                "sweep:\n  backend.tensor_parallel: [1, 2]\n"
                                                "output: {dir: " + out() + "}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(backend.tensor_parallel=2) 2 device(s), stages:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; collectives 2.00 KiB, "), std::string::npos) << r.out;  // the summary line
  const Json one = read_json_file(out() + "/tp-0.json"), two = read_json_file(out() + "/tp-1.json");
  EXPECT_EQ(one["config"]["backend"]["tensor_parallel"], 1);
  EXPECT_TRUE(one["execution"].value("communication", Json()).is_null());
  EXPECT_EQ(two["config"]["backend"]["tensor_parallel"], 2);
  EXPECT_EQ(two["plan"]["tensor_parallel"], 2);
  EXPECT_EQ(two["throughput"]["output_tokens"], 6);
  const Json& comm = two["execution"]["communication"];
  ASSERT_TRUE(comm.is_object()) << two["execution"].dump();
  EXPECT_EQ(comm["ranks"], 2);
  EXPECT_GT(comm["collectives"]["all_reduce"]["calls"].get<double>(), 0);
  // Two all-reduces per layer (attention and MLP) of one hidden vector (64 floats) per token.
  EXPECT_DOUBLE_EQ(comm["bytes_per_token"].get<double>(), 4 * 2 * 64 * 4);
  EXPECT_GT(comm["share_of_forward_time"].get<double>(), 0);
  EXPECT_LT(comm["share_of_forward_time"].get<double>(), 1);

  const std::string csv = read_text_file_or_empty(out() + "/tp.csv");
  std::istringstream rows(csv);
  std::string header, row0, row1;
  std::getline(rows, header);
  std::getline(rows, row0);
  std::getline(rows, row1);
  auto split = [](const std::string& row) {  // RFC 4180 cells: "a,b" is one
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (char c : row) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.emplace_back();
      else cells.back() += c;
    }
    return cells;
  };
  const std::vector<std::string> names = split(header);
  auto cell = [&](const std::string& row, const std::string& name) {
    const std::size_t i = static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    const std::vector<std::string> cells = split(row);
    return i < cells.size() ? cells[i] : std::string();
  };
  ASSERT_NE(header.find("comm_bytes_per_token,comm_ms_per_token,comm_share"), std::string::npos) << header;
  EXPECT_EQ(cell(row0, "comm_bytes_per_token"), "");
  EXPECT_DOUBLE_EQ(std::stod(cell(row1, "comm_bytes_per_token")), 2048.0) << row1;
  EXPECT_GT(std::stod(cell(row1, "comm_ms_per_token")), 0) << row1;
  EXPECT_EQ(two["config"]["device_ids"], Json::array({0, 1}));  // the devices of both ranks
  EXPECT_NE(read_text_file_or_empty(out() + "/tp.html").find("Communication of 2 tensor-parallel ranks"), std::string::npos);

  // A size that cannot split the model: exit 2 at the key's line, naming the sizes that work.
  const std::string bad = config("tp3.yaml", "model: " + model_ + "\nbackend:\n  threads: 2\n  tensor_parallel: 3\nscenario: {prompts: [a]}\n");
  const auto b = run_plexus("bench " + shell_quote(bad) + " --output-dir " + shell_quote(out()));
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_NE(b.err.find("tp3.yaml:4: backend.tensor_parallel 3 cannot split this model"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("backend.tensor_parallel 1, 2, 4 work"), std::string::npos) << b.err;
  // Expert parallelism of a dense model: exit 2 at the key's line.
  const std::string ep = config("ep2.yaml", "model: " + model_ + "\nbackend:\n  threads: 2\n  expert_parallel: 2\nscenario: {prompts: [a]}\n");
  const auto e = run_plexus("bench " + shell_quote(ep) + " --output-dir " + shell_quote(out()));
  EXPECT_EQ(e.exit_code, 2) << e.err;
  EXPECT_NE(e.err.find("ep2.yaml:4: backend.expert_parallel 2: this model (LlamaForCausalLM) has no experts"), std::string::npos) << e.err;
}

TEST_F(BenchCli, ModelMakeMakesAMissingModelAndOutputDirWins) {
  const std::string made = work_ / "made";
  const std::string cfg = config("mk.yaml", "name: mk\nmodel: " + made + "\nmodel_make: {preset: tiny, dtype: f32, seed: 2}\n"
                                                "scenario: {prompts_ids: [[1, 2, 3]], max_new_tokens: 2}\n"
                                                "output: {dir: /nonexistent-dir-never-used}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --output-dir " + shell_quote(out()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(made + "/config.json"));
  EXPECT_NE(r.err.find("making the model"), std::string::npos);
  const Json j = read_json_file(out() + "/mk.json");
  EXPECT_EQ(j["config"]["device_ids"], Json::array());  // one engine on the host
  EXPECT_EQ(j["config"]["model_make"]["preset"], "tiny");
}

// A tokenizer named in model_make that is not there is bad input (the demo model is never made
// without one, quietly); nothing is made.
TEST_F(BenchCli, ModelMakeWithAMissingTokenizerIsRefused) {
  const std::string made = work_ / "made";
  const std::string cfg = config("mk.yaml", "name: mk\nmodel: " + made + "\nmodel_make:\n  preset: tiny\n  tokenizer: /no/such/tokenizer\n"
                                                "scenario: {prompts_ids: [[1, 2, 3]], max_new_tokens: 2}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --output-dir " + shell_quote(out()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("mk.yaml:5: model_make.tokenizer: '/no/such/tokenizer' not found"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(made));
}

TEST_F(BenchCli, DatasetAndDeviceMapFile) {
  const std::string data = work_ / "prompts.jsonl";
  std::ofstream(data) << "{\"prompt\": \"Hello world\"}\n\n{\"ids\": [1, 415, 5565]}\n";
  const auto plan = run_plexus("plan " + shell_quote(model_) + " --virtual-devices 2 --strategy sequential --json");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string map = work_ / "map.json";
  std::ofstream(map) << plan.out;
  const std::string cfg = config("ds.yaml", "name: ds\nmodel: " + model_ + "\nbackend: {virtual_devices: 2, device_map: " + map +
                                                "}\nscenario: {dataset: " + data + ", max_new_tokens: 2, warmup_samples: 0}\n"
                                                "output: {dir: " + out() + ", formats: [json]}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = read_json_file(out() + "/ds.json");
  EXPECT_EQ(j["throughput"]["samples"], 2);  // one per dataset line; blank lines skipped
  EXPECT_EQ(j["config"]["backend"]["device_map"], map);
  EXPECT_EQ(j["plan"]["device_map"], parse_json(plan.out, "plan")["device_map"]);
  EXPECT_FALSE(fs::exists(out() + "/ds.csv"));

  std::ofstream(data) << "{\"prompt\": \"ok\"}\n{\"text\": 3}\n";
  const auto bad = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(data + ":2: expected a string \"prompt\""), std::string::npos) << bad.err;
}

TEST_F(BenchCli, BadConfigsExitTwoNamingFileLineAndKey) {
  const struct {
    std::string yaml, expected;
  } cases[] = {
      {"model: " + model_ + "\nscenario:\n  prompts: [a]\n  num_sampels: 2\n", "bad.yaml:4: scenario.num_sampels: unknown key"},
      {"model: " + model_ + "\nscenario:\n  prompts: [a]\n  num_samples: -2\n", "bad.yaml:4: scenario.num_samples"},
      {"model: " + model_ + "\nbackend: {device_map: quickest}\nscenario: {prompts: [a]}\n", "bad.yaml:2: backend.device_map"},
      {"model: " + (work_ / "absent") + "\nscenario: {prompts: [a]}\n", "bad.yaml:1: model: '"},
      {"model: " + model_ + "\nscenario: {prompts_ids: [[1, 99999999]]}\n", "bad.yaml:2: scenario.prompts_ids[0]: token id 99999999 is outside"},
      {"model: " + model_ + "\nbackend:\n  virtual_devices: 2\n  device_ids: [0, 5]\nscenario: {prompts: [a]}\n",
       "bad.yaml:4: backend.device_ids: device 5 has no budget (accelerators: 0,1)"},
      {"model: " + model_ + "\nscenario: {prompts: [a}\n", "bad.yaml:2: YAML syntax error"},
  };
  for (const auto& c : cases) {
    const auto r = run_plexus("bench " + shell_quote(config("bad.yaml", c.yaml)) + " --output-dir " + shell_quote(out()));
    EXPECT_EQ(r.exit_code, 2) << c.yaml << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err << "expected: " << c.expected;
  }
  const std::string good = config("good.yaml", "model: " + model_ + "\nscenario: {prompts: [a]}\n");
  const auto s = run_plexus("bench " + shell_quote(good) + " --output-dir " + shell_quote(out()) + " --set backend.virtual_devise=2");
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.err.find("--set backend.virtual_devise: unknown key (did you mean 'backend.virtual_devices'?)"), std::string::npos) << s.err;
  EXPECT_EQ(run_plexus("bench " + shell_quote(work_ / "missing.yaml")).exit_code, 2);
}

TEST_F(BenchCli, AFailingSweepPointIsRecordedAndTheSweepGoesOn) {
  // The second point asks for more tokens than the context holds: it fails at run time.
  const std::string cfg = config("fp.yaml", "name: fp\nmodel: " + model_ +
                                                "\nscenario: {prompts_ids: [[1, 415]], max_new_tokens: 2, warmup_samples: 0}\n"
                                                "sweep:\n  scenario.max_new_tokens: [2, 5000, 3]\n"
                                                "output: {dir: " + out() + "}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("1 of 3 run(s) failed"), std::string::npos) << r.err;
  const Json s = read_json_file(out() + "/fp.json");
  ASSERT_TRUE(s.contains("runs") && s.contains("failed") && s.contains("completed")) << s.dump();
  ASSERT_EQ(s["runs"].size(), 3u);
  EXPECT_EQ(s["failed"], 1);
  EXPECT_EQ(s["completed"], 2);
  EXPECT_EQ(s["runs"][0]["status"], "ok");
  EXPECT_EQ(s["runs"][1]["status"], "failed");
  EXPECT_NE(s["runs"][1]["error"].get<std::string>().find("exceeds the model's context"), std::string::npos);
  EXPECT_EQ(s["runs"][2]["throughput"]["output_tokens"], 3);  // the point after the failure ran
  EXPECT_EQ(read_json_file(out() + "/fp-1.json")["status"], "failed");
  const std::string csv = read_text_file_or_empty(out() + "/fp.csv");
  EXPECT_EQ(lines(csv), 4);
  EXPECT_NE(csv.find(",failed,"), std::string::npos);
  EXPECT_NE(csv.find("exceeds the model's context"), std::string::npos);
  EXPECT_TRUE(testing::report_file_problems(out()).empty());
}

TEST_F(BenchCli, AnUnwritableOutputDirFailsBeforeMeasuring) {
  // Root writes through permission bits, so there the read-only directory is a read-only tmpfs;
  // anyone else gets a directory without write permission.
  std::unique_ptr<testing::TmpfsMount> ro;
  std::string parent = work_ / "ro";
  if (::geteuid() == 0) {
    ro = std::make_unique<testing::TmpfsMount>(parent, 1 << 20, /*read_only=*/true);
    if (!ro->mounted()) GTEST_SKIP() << ro->why();
  } else {
    fs::create_directories(parent);
    fs::permissions(parent, fs::perms::owner_read | fs::perms::owner_exec);
  }
  const std::string cfg = config("ro.yaml", "name: ro\nmodel: " + model_ +
                                                "\nscenario: {prompts_ids: [[1, 415]], num_samples: 2, max_new_tokens: 2}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg) + " --output-dir " + shell_quote(parent + "/results"));
  if (!ro) fs::permissions(parent, fs::perms::owner_all);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--output-dir '" + parent + "/results'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("measuring"), std::string::npos) << r.err;  // nothing was measured first
  EXPECT_EQ(r.out.find("output tok/s"), std::string::npos) << r.out;
}

TEST_F(BenchCli, SigintKeepsTheFinishedPointsMarkedInterrupted) {
  const std::string cfg = config("int.yaml", "name: int\nmodel: " + model_ +
                                                 "\nscenario: {prompts_ids: [[1, 415, 5565]], num_samples: 6, max_new_tokens: 24, warmup_samples: 0}\n"
                                                 "sweep:\n  scenario.seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]\n"
                                                 "output: {dir: " + out() + "}\n");
  const pid_t pid = testing::spawn_plexus({"bench", cfg, "--quiet"}, work_ / "int.out", work_ / "int.err");
  ASSERT_GT(pid, 0);
  // Each point's JSON appears as soon as that point ends: wait for the second one, then interrupt.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(out() + "/int-1.json") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool appeared = fs::exists(out() + "/int-1.json");
  ::kill(pid, SIGINT);
  const int code = testing::wait_exit(pid);
  ASSERT_TRUE(appeared) << "no per-point JSON while the sweep ran";
  const std::string err = read_text_file_or_empty(work_ / "int.err");
  if (code == 0) GTEST_SKIP() << "the sweep ended before the signal";
  EXPECT_EQ(code, 130) << err;
  const Json s = read_json_file(out() + "/int.json");
  ASSERT_TRUE(s.contains("interrupted") && s.contains("points") && s.contains("runs")) << s.dump();
  EXPECT_EQ(s["interrupted"], true);
  EXPECT_EQ(s["points"], 20);
  ASSERT_GE(s["runs"].size(), 2u);
  ASSERT_LT(s["runs"].size(), 20u);
  EXPECT_EQ(s["runs"][0]["status"], "ok");
  EXPECT_EQ(s["runs"][0]["interrupted"], false);
  for (std::size_t i = 0; i + 1 < s["runs"].size(); ++i) EXPECT_EQ(s["runs"][i]["status"], "ok") << i;
  // The run the signal ended (if it had begun) keeps what it measured, marked interrupted.
  EXPECT_EQ(s["runs"].back()["interrupted"], s["runs"].back()["status"] == "interrupted");
  EXPECT_EQ(lines(read_text_file_or_empty(out() + "/int.csv")), static_cast<int>(s["runs"].size()) + 1);
  EXPECT_NE(read_text_file_or_empty(out() + "/int.html").find("interrupted"), std::string::npos);
  EXPECT_TRUE(testing::report_file_problems(out()).empty());
}

}  // namespace
}  // namespace plexus
