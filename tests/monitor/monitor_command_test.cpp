// `plexus monitor -- CMD` as a real process against the fake NVML: the command's exit status,
// signals passed on, a command that cannot run, energy over the command's window and the GPU
// memory of the command's own processes; and the pieces (process tree, PATH search).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/json.h"
#include "durability_util.h"
#include "monitor/child_process.h"
#include "monitor/process_tree.h"

extern char** environ;

namespace plexus {

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/plexus_monitor_cmd_" + std::to_string(::getpid()) + "_" + name;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Watched {
  int code = -1;
  std::string summary;  // the --output file
};

// plexus monitor --output FILE ARGS... against `library` reading the fake NVML script `script`
// (absolute). With `signal_when`: SIGINT to plexus 0.1 s after that file appears.
Watched monitor(const char* library, const std::string& script, std::vector<std::string> args,
            const std::string& signal_when = "") {
  const std::string output = temp_path("summary");
  std::remove(output.c_str());
  ::setenv("PLEXUS_NVML_LIBRARY", library, 1);
  ::setenv("PLEXUS_FAKE_NVML_SCRIPT", script.c_str(), 1);
  ::setenv("PLEXUS_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so", 1);
  args.insert(args.begin(), {PLEXUS_BINARY, "monitor", "--interval-ms", "20", "--output", output});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  Watched r;
  if (posix_spawn(&pid, PLEXUS_BINARY, &actions, nullptr, argv.data(), environ) != 0) return r;
  posix_spawn_file_actions_destroy(&actions);
  if (!signal_when.empty()) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (access(signal_when.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pid, SIGINT);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.summary = read_text(output);
  std::remove(output.c_str());
  return r;
}

const std::string kSteadyScript = std::string(PLEXUS_SOURCE_DIR) + "/tests/monitor/data/two_gpus_ramp.json";

}  // namespace

TEST(MonitorCommand, ExitsWithTheCommandsStatusAndASummary) {
  const Watched text = monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--", "sh", "-c", "exit 3"});
  EXPECT_EQ(text.code, 3);
  EXPECT_NE(text.summary.find("'sh -c exit 3' exited with 3"), std::string::npos) << text.summary;
  EXPECT_NE(text.summary.find("Fake GPU steady"), std::string::npos) << text.summary;

  const Watched json = monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--json", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(json.code, 3);
  const Json j = Json::parse(json.summary);
  EXPECT_EQ(j["command"]["exit_code"], 3);
  EXPECT_TRUE(j["command"]["signal"].is_null());
  EXPECT_EQ(j["command"]["argv"], Json::array({"sh", "-c", "exit 3"}));
  EXPECT_EQ(j["devices"].size(), 2u);
  EXPECT_GE(j["samples"].get<int>(), 2);

  // The command's own 127 stays 127; a signal death is 128 + the signal, as shells report it.
  EXPECT_EQ(monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--", "sh", "-c", "exit 127"}).code, 127);
  const Watched killed = monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--json", "--", "sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(killed.code, 128 + SIGTERM);
  EXPECT_EQ(Json::parse(killed.summary)["command"]["signal"], SIGTERM);
}

TEST(MonitorCommand, SigintReachesTheCommandAndTheSummaryIsStillWritten) {
  const std::string ready = temp_path("ready"), trapped = temp_path("trapped");
  std::remove(ready.c_str());
  std::remove(trapped.c_str());
  const std::string script = "trap 'echo INT > " + trapped + "; exit 5' INT; touch " + ready + "; while :; do sleep 0.02; done";
  const Watched r = monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--json", "--", "sh", "-c", script}, ready);
  EXPECT_EQ(r.code, 5);  // the command's answer to the signal
  EXPECT_EQ(read_text(trapped), "INT\n");
  const Json j = Json::parse(r.summary);
  EXPECT_EQ(j["command"]["exit_code"], 5);
  EXPECT_EQ(j["command"]["interrupted"], true);
  std::remove(ready.c_str());
  std::remove(trapped.c_str());
}

TEST(MonitorCommand, ACommandThatCannotRunExitsTwo) {
  EXPECT_EQ(monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--", "plexus-no-such-command"}).code, 2);
  EXPECT_EQ(monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--", "/nonexistent/dir/cmd"}).code, 2);
  // Executable but not a program: execve fails in the child, reported through the pipe.
  const std::string junk = temp_path("junk");
  std::ofstream(junk) << "\x7f\x01\x02 not a program\n";
  ::chmod(junk.c_str(), 0755);
  const Watched r = monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--json", "--", junk});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.summary.empty());  // nothing measured is reported
  std::remove(junk.c_str());
  EXPECT_EQ(monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--"}).code, 2);
  EXPECT_EQ(monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--duration", "1", "--", "true"}).code, 2);
}

// The energy over the command's window is the fake counter's step between the session's first and
// last sample (read back from --csv), and covers the command (150 W steady × its duration).
TEST(MonitorCommand, EnergyOverTheCommandIsTheCountersDelta) {
  const std::string csv = temp_path("samples.csv");
  const Watched r = monitor(FAKE_NVML_LIBRARY, kSteadyScript, {"--json", "--csv", csv, "--", "sleep", "0.3"});
  ASSERT_EQ(r.code, 0) << r.summary;
  const Json j = Json::parse(r.summary);
  const double duration = j["duration_s"].get<double>();
  EXPECT_GE(duration, 0.3);
  EXPECT_GE(duration, j["command"]["wall_s"].get<double>());  // the window covers the command
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = testing::csv_cells(line);
  const auto column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  std::vector<double> counter;  // GPU 0's counter at every sample
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = testing::csv_cells(line);
    if (cells.at(column("device")) == "0") counter.push_back(std::stod(cells.at(column("energy_counter_j"))));
  }
  ASSERT_GE(counter.size(), 2u);
  EXPECT_EQ(static_cast<int>(counter.size()), j["samples"].get<int>());
  const Json& steady = j["devices"][0];
  EXPECT_EQ(steady["energy_method"], "counter");
  EXPECT_NEAR(steady["energy_j"].get<double>(), counter.back() - counter.front(), 0.011) << steady.dump();  // the CSV keeps 6 digits
  EXPECT_NEAR(steady["energy_j"].get<double>(), 150.0 * duration, 150.0 * duration * 0.05);
  std::remove(csv.c_str());
}

// Two jobs share the GPU: pid 1 (not ours, 5000 MiB) and the command's grandchild (300 MiB, 25 %
// SM), whose pid the fake learns from a file the grandchild writes.
TEST(MonitorCommand, PerProcessGpuMemoryCountsOnlyTheCommandsProcesses) {
  const std::string pid_file = temp_path("pid"), script = temp_path("nvml.json");
  std::remove(pid_file.c_str());
  const Json fake{{"devices",
                   {{{"name", "Fake shared GPU"}, {"memory_total_mb", 16384}, {"memory_used_mb", 5300}, {"power_w", 100},
                     {"process_list",
                      {{{"pid", 1}, {"used_mb", 5000}, {"sm_util", 60}},
                       {{"pid_file", pid_file}, {"used_mb", 300}, {"sm_util", 25}}}}}}}};
  std::ofstream(script) << fake.dump();
  const std::string inner = "echo $$ > " + pid_file + "; sleep 0.3";
  const Watched r = monitor(FAKE_NVML_LIBRARY, script, {"--json", "--", "sh", "-c", "sh -c '" + inner + "'; true"});
  ASSERT_EQ(r.code, 0) << r.summary;
  const Json j = Json::parse(r.summary);
  const Json& gpu = j["devices"][0];
  ASSERT_TRUE(gpu.contains("process")) << gpu.dump();
  EXPECT_DOUBLE_EQ(gpu["process"]["max_memory_used_mb"].get<double>(), 300.0) << gpu.dump();
  EXPECT_LE(gpu["process"]["avg_memory_used_mb"].get<double>(), 300.0);
  EXPECT_GT(gpu["process"]["avg_utilization_percent"].get<double>(), 0.0);
  EXPECT_LE(gpu["process"]["avg_utilization_percent"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(gpu["max_memory_used_mb"].get<double>(), 5300.0);  // the whole GPU, as before

  // A driver without the process queries: absent, not zero.
  const Watched minimal = monitor(FAKE_NVML_MINIMAL_LIBRARY, script, {"--json", "--", "sh", "-c", "sh -c '" + inner + "'; true"});
  ASSERT_EQ(minimal.code, 0);
  EXPECT_FALSE(Json::parse(minimal.summary)["devices"][0].contains("process")) << minimal.summary;
  std::remove(pid_file.c_str());
  std::remove(script.c_str());
}

TEST(ProcessTree, DescendantsFollowParentLinks) {
  const std::map<pid_t, pid_t> parents{{1, 0}, {10, 1}, {11, 10}, {12, 10}, {13, 11}, {20, 1}, {21, 20}};
  EXPECT_EQ(descendants_of(10, parents), (std::vector<pid_t>{10, 11, 12, 13}));
  EXPECT_EQ(descendants_of(21, parents), (std::vector<pid_t>{21}));
  EXPECT_EQ(descendants_of(99, parents), (std::vector<pid_t>{99}));  // gone: just itself
  // This process's tree holds it and a child it starts.
  ChildProcess child({"sleep", "5"});
  const auto tree = process_tree(::getpid());
  EXPECT_EQ(tree.front(), ::getpid());
  EXPECT_NE(std::find(tree.begin(), tree.end(), child.pid()), tree.end());
}

TEST(ChildProcessTest, ResolvesThroughPathAndRunsHeldUntilReleased) {
  EXPECT_EQ(resolve_command("sh").back(), 'h');
  EXPECT_THROW(resolve_command("plexus-no-such-command"), InputError);
  EXPECT_THROW(resolve_command(""), InputError);
  const std::string marker = temp_path("held");
  std::remove(marker.c_str());
  ChildProcess child({"sh", "-c", "echo ran > " + marker + "; exit 7"});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(child.poll().has_value());  // held: it has not run
  EXPECT_NE(access(marker.c_str(), F_OK), 0);
  child.release();
  const ChildExit e = child.wait();
  EXPECT_EQ(e.exit_code, 7);
  EXPECT_EQ(e.signal, 0);
  EXPECT_EQ(read_text(marker), "ran\n");
  std::remove(marker.c_str());
}

}  // namespace plexus
