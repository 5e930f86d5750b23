// `plexus monitor` as a real process: --duration, --json, --csv, Ctrl-C, bad usage.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
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
// `sig` `delay_ms` after that file appears (the CSV: the session has started, the handler is set),
// or `delay_ms` after the start when it is "".
Result run(const char* library, std::vector<std::string> args, const std::optional<std::string>& interrupt_when = std::nullopt,
           int delay_ms = 200, int sig = SIGINT) {
  const std::string out_path = ::testing::TempDir() + "/plexus_monitor_cli_" + std::to_string(::getpid()) + ".out";
  ::setenv("PLEXUS_NVML_LIBRARY", library, 1);
  ::setenv("PLEXUS_FAKE_NVML_SCRIPT", (std::string(PLEXUS_SOURCE_DIR) + "/tests/monitor/data/two_gpus_ramp.json").c_str(), 1);
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
  if (interrupt_when) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!interrupt_when->empty() && access(interrupt_when->c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
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
  const Result r = run(FAKE_NVML_LIBRARY, {"--idle-baseline", "120", "--interval-ms", "20", "--json"}, "", 1500, SIGTERM);
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

TEST(MonitorCli, BadUsage) {
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, {"--interval-ms", "0"}).code, 2);
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, {"--duration", "-1"}).code, 2);
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, {"--devices", "a"}).code, 2);
  EXPECT_EQ(run(FAKE_NVML_LIBRARY, {"--duration", "0.1", "--csv", "/nonexistent/dir/x.csv"}).code, 1);
}

}  // namespace plexus
