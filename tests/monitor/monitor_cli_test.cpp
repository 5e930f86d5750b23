// `plexus monitor` as a real process: --duration, --json, --csv, Ctrl-C, bad usage.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/json.h"
#include "durability_util.h"

extern char** environ;

namespace plexus {

namespace {

struct Result {
  int code = -1;
  std::string out;
};

// Starts plexus with `args` against the fake NVML, stdout to a file. With `interrupt_when`, sends
// SIGINT 0.2 s after that file appears (the CSV: the session has started, the handler is set);
// with `signal_after_ms` >= 0 instead, sends `sig` that long after the start. `script`: the fake
// NVML's readings (tests/monitor/data).
Result run(const char* library, std::vector<std::string> args, const std::string& interrupt_when = "",
           const std::string& script = "two_gpus_ramp.json", int signal_after_ms = -1, int sig = SIGINT) {
  const std::string out_path = ::testing::TempDir() + "/plexus_monitor_cli_" + std::to_string(::getpid()) + ".out";
  ::setenv("PLEXUS_NVML_LIBRARY", library, 1);
  ::setenv("PLEXUS_FAKE_NVML_SCRIPT", (std::string(PLEXUS_SOURCE_DIR) + "/tests/monitor/data/" + script).c_str(), 1);
  ::setenv("PLEXUS_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so", 1);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  args.insert(args.begin(), {PLEXUS_BINARY, "monitor"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  Result r;
  if (posix_spawn(&pid, PLEXUS_BINARY, &actions, nullptr, argv.data(), environ) != 0) return r;
  posix_spawn_file_actions_destroy(&actions);
  if (!interrupt_when.empty()) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (access(interrupt_when.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(pid, SIGINT);
  } else if (signal_after_ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(signal_after_ms));
    kill(pid, sig);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out_path);
  std::ostringstream text;
  text << in.rdbuf();
  r.out = text.str();
  std::remove(out_path.c_str());
  return r;
}

}  // namespace

TEST(MonitorCli, DurationJsonSummary) {
  const std::string csv = ::testing::TempDir() + "/plexus_monitor_cli.csv";
  const Result r = run(FAKE_NVML_LIBRARY, {"--duration", "0.3", "--interval-ms", "20", "--json", "--csv", csv});
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  EXPECT_NEAR(j["duration_s"].get<double>(), 0.3, 0.25);
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][0]["index"], 0);
  EXPECT_EQ(j["devices"][0]["name"], "Fake GPU steady");
  EXPECT_EQ(j["devices"][0]["energy_method"], "counter");
  EXPECT_DOUBLE_EQ(j["devices"][0]["avg_power_w"].get<double>(), 150.0);
  EXPECT_DOUBLE_EQ(j["devices"][1]["avg_utilization_percent"].get<double>(), 70.0);
  EXPECT_DOUBLE_EQ(j["aggregate"]["total_avg_utilization"].get<double>(), 50.0);
  EXPECT_TRUE(j["aggregate"]["any_gpu_active"].get<bool>());
  EXPECT_EQ(j["host"]["index"], "cpu");
  EXPECT_EQ(j.value("interrupted", true), false);
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("t_s,device,kind,name,", 0), 0u);
  std::remove(csv.c_str());
}

TEST(MonitorCli, CtrlCEndsCleanlyWithTheSummary) {
  const std::string csv = ::testing::TempDir() + "/plexus_monitor_ctrl_c_" + std::to_string(::getpid()) + ".csv";
  std::remove(csv.c_str());
  const Result r = run(FAKE_NVML_MINIMAL_LIBRARY, {"--interval-ms", "20", "--json", "--csv", csv}, csv);
  std::remove(csv.c_str());
  ASSERT_EQ(r.code, 130) << r.out;  // stopped by a signal, as a shell reports Ctrl-C
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.value("interrupted", false), true);
  EXPECT_GE(j["samples"].get<int>(), 2);
  EXPECT_EQ(j["devices"][1]["energy_method"], "power-integration");
}

// SIGTERM while the idle baseline is being measured ends monitor then, not after the baseline.
TEST(MonitorCli, SigtermDuringTheIdleBaselineEndsItPromptly) {
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = run(FAKE_NVML_LIBRARY, {"--idle-baseline", "120", "--interval-ms", "20", "--json"}, "", "two_gpus_ramp.json", 1500, SIGTERM);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_EQ(Json::parse(r.out).value("interrupted", false), true);
  EXPECT_LT(seconds, 60.0);  // a 120 s baseline was cut short
}

TEST(MonitorCli, ACsvOnAFullDiskExitsOneKeepingOnlyCompleteRows) {
  const std::string dir = ::testing::TempDir() + "/plexus_monitor_full_" + std::to_string(::getpid());
  testing::TmpfsMount disk(dir, 16 * 1024);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  const std::string csv = dir + "/samples.csv";
  // Three devices every millisecond fill 16 KiB in well under a second; --duration is the backstop.
  const Result r = run(FAKE_NVML_LIBRARY, {"--duration", "20", "--interval-ms", "1", "--json", "--csv", csv});
  EXPECT_EQ(r.code, 1) << r.out;
  const Json j = Json::parse(r.out);  // the summary is still printed
  EXPECT_NE(j.value("csv_error", std::string()).find(csv), std::string::npos) << r.out;
  EXPECT_LT(j["duration_s"].get<double>(), 15.0);  // the write error ended the session
  EXPECT_TRUE(testing::report_file_problems(dir).empty());
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_EQ(testing::csv_cells(line).size(), testing::csv_cells(header).size()) << "row " << rows << ": " << line;
  }
  EXPECT_GT(rows, 3);
}

TEST(MonitorCli, CounterResetsLostGpusAndBogusReadingsAreReported) {
  const Result r = run(FAKE_NVML_LIBRARY, {"--duration", "0.6", "--interval-ms", "20", "--json"}, "", "faulty_gpus.json");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["devices"].size(), 3u) << r.out;
  const double duration = j["duration_s"].get<double>();
  // The counter restarted from 0 at 0.25 s: bridged with power, not reported as "counter" and low.
  const Json& reset = j["devices"][0];
  EXPECT_EQ(reset["energy_method"], "counter+power") << reset.dump();
  EXPECT_EQ(reset["energy_counter_resets"], 1);
  EXPECT_NEAR(reset["energy_j"].get<double>(), 100.0 * duration, 100.0 * 0.05) << reset.dump();
  // The GPU that fell off the bus: partial, with the time covered and when it was lost.
  const Json& lost = j["devices"][1];
  EXPECT_EQ(lost["energy_method"], "partial") << lost.dump();
  EXPECT_LT(lost["energy_covered_s"].get<double>(), duration);
  EXPECT_TRUE(lost["lost_at_s"].is_number()) << lost.dump();
  // 0xFFFFFFFF mW is not 4.29 MW: dropped and counted; a name without its NUL stays in its buffer.
  const Json& bogus = j["devices"][2];
  EXPECT_TRUE(bogus["max_power_w"].is_null()) << bogus.dump();
  EXPECT_GT(bogus["dropped_readings"].get<int>(), 0);
  EXPECT_EQ(bogus["name"], std::string(128, 'X'));
}

TEST(MonitorCli, AHungDriverNeverBlocksTheMonitorOrItsExit) {
  // Every NVML reading blocks (for an hour) from 0.2 s on: before, `monitor` never returned.
  ::setenv("PLEXUS_DRIVER_TIMEOUT_MS", "300", 1);
  const Result r = run(FAKE_NVML_LIBRARY, {"--duration", "1", "--interval-ms", "50", "--json"}, "", "hung_gpu.json");
  ::unsetenv("PLEXUS_DRIVER_TIMEOUT_MS");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["problems"].size(), 1u) << r.out;
  EXPECT_NE(j["problems"][0].get<std::string>().find("nvml: a reading gave no answer within 300 ms"), std::string::npos) << r.out;
  ASSERT_EQ(j["devices"].size(), 1u);
  EXPECT_EQ(j["devices"][0]["energy_method"], "partial");
  EXPECT_TRUE(j["devices"][0]["lost_at_s"].is_number());
  EXPECT_GE(j["host"]["samples"].get<int>(), 3);  // the host goes on being sampled
}

TEST(MonitorCli, BadUsage) {
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, {"--interval-ms", "0"}).code, 2);
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, {"--duration", "-1"}).code, 2);
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, {"--devices", "a"}).code, 2);
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, {"--duration", "0.1", "--csv", "/nonexistent/dir/x.csv"}).code, 1);
}

}  // namespace plexus
