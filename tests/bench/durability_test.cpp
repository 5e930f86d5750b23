// Nothing lost: `plexus bench`, `monitor`, `make-model` and `generate --json` as real processes,
// interrupted (SIGINT / SIGTERM) at seeded-random moments and run on a small tmpfs that fills up.
// After every trial each file present must be complete and valid (JSON parses, CSV rows have the
// header's cell count, HTML ends with </html>), no temporary file may be left, and the exit code
// must say what happened: 0 done, 1 a write failed (naming the file), 130 interrupted.
// PLEXUS_DURABILITY_SEED=N replays other moments (the seed is printed).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include "core/json.h"
#include "core/mmap_file.h"
#include "durability_util.h"
#include "test_util.h"

namespace plexus {
namespace {

namespace fs = std::filesystem;
using testing::report_file_problems;
using testing::run_plexus;
using testing::shell_quote;
using testing::spawn_plexus;
using testing::TmpfsMount;
using testing::wait_exit;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

class Durability : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>("durability");
    model_ = *dir_ / "tiny";
    const auto r = run_plexus("make-model " + shell_quote(model_) + " --preset tiny --seed 4 --tokenizer " +
                              shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // How long plexus takes to start (loading its libraries; slow on a loaded machine) before any
    // command can install its handlers: a signal then kills it as any program. The delays below
    // count from the end of it, so they land in the work the tests are about. The longest of three.
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)run_plexus("--version");
      startup_s_ = std::max(startup_s_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("plexus starts in %.3f s here; signals are sent that much later\n", startup_s_);
  }
  static void TearDownTestSuite() { dir_.reset(); }
  void SetUp() override {
    ::setenv("PLEXUS_NVML_LIBRARY", FAKE_NVML_LIBRARY, 1);
    ::setenv("PLEXUS_FAKE_NVML_SCRIPT", (std::string(PLEXUS_SOURCE_DIR) + "/tests/monitor/data/two_gpus_ramp.json").c_str(), 1);
    ::setenv("PLEXUS_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so", 1);
    ::unsetenv("PLEXUS_VIRTUAL_DEVICES");
    const char* env = std::getenv("PLEXUS_DURABILITY_SEED");
    seed_ = env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 13u;
    rng_.seed(seed_);
    std::printf("durability seed %u (PLEXUS_DURABILITY_SEED=%u replays it)\n", seed_, seed_);
  }

  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  int pick_signal() { return std::bernoulli_distribution(0.5)(rng_) ? SIGINT : SIGTERM; }

  // A sweep of `points` runs over 2 virtual devices writing every format to `out`.
  std::string bench_config(const std::string& tag, const std::string& out, int points) {
    std::string seeds;
    for (int i = 0; i < points; ++i) seeds += (i ? ", " : "") + std::to_string(i + 1);
    const std::string path = work_ / (tag + ".yaml");
    std::ofstream(path) << "name: " << tag << "\nmodel: " << model_
                        << "\nbackend: {virtual_devices: 2}\n"
                           "scenario: {prompts_ids: [[1, 415, 5565]], num_samples: 4, batch_size: 2, max_new_tokens: 12, "
                           "warmup_samples: 0}\nmonitor: {interval_ms: 5}\nsweep:\n  scenario.seed: ["
                        << seeds << "]\noutput: {dir: " << out << ", formats: [json, csv, html]}\n";
    return path;
  }

  struct Outcome {
    int code = -1;
    std::string out, err;
  };
  // Runs plexus ARGS; with `signal_after_s`, sends `sig` that long after the start (or after
  // `after_file` appears, when given).
  Outcome run(const std::vector<std::string>& args, std::optional<double> signal_after_s = std::nullopt, int sig = SIGINT,
              const std::string& after_file = "") {
    const std::string out = work_ / "stdout", err = work_ / "stderr";
    const pid_t pid = spawn_plexus(args, out, err);
    EXPECT_GT(pid, 0);
    if (pid <= 0) return {};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!after_file.empty() && !fs::exists(after_file) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (signal_after_s) {
      std::this_thread::sleep_for(std::chrono::duration<double>(*signal_after_s + (after_file.empty() ? startup_s_ : 0.0)));
      ::kill(pid, sig);
    }
    Outcome o;
    o.code = wait_exit(pid);
    o.out = read_text_file_or_empty(out);
    o.err = read_text_file_or_empty(err);
    return o;
  }

  static std::unique_ptr<testing::TempDir> dir_;
  static std::string model_;
  static double startup_s_;
  testing::TempDir work_{"durability-run"};
  unsigned seed_ = 13;
  std::mt19937 rng_;
};
std::unique_ptr<testing::TempDir> Durability::dir_;
std::string Durability::model_;
double Durability::startup_s_ = 0;

TEST_F(Durability, BenchInterruptedAtRandomMomentsKeepsCompleteReports) {
  int interrupted = 0;
  for (int trial = 0; trial < 4; ++trial) {
    const std::string out = work_ / ("bench-int-" + std::to_string(trial));
    // Trials 0 and 1 count from the start (model loading, the first point); 2 and 3 from the end
    // of the first point, with many points still to run.
    const bool mid_sweep = trial >= 2;
    const double after = mid_sweep ? uniform(0.0, 0.6) : uniform(0.1, 1.0);
    const int sig = pick_signal();
    SCOPED_TRACE("trial " + std::to_string(trial) + ": signal " + std::to_string(sig) + " after " + std::to_string(after) + " s" +
                 (mid_sweep ? " after the first point" : ""));
    const Outcome o = run({"bench", bench_config("bi", out, 20), "--quiet"}, after, sig, mid_sweep ? out + "/bi-0.json" : "");
    ASSERT_TRUE(o.code == 0 || o.code == 130) << o.code << "\n" << o.err;
    EXPECT_EQ(join(report_file_problems(out)), "");
    if (o.code == 130) {
      ++interrupted;
      EXPECT_NE(o.err.find("interrupted by " + std::string(sig == SIGINT ? "SIGINT" : "SIGTERM")), std::string::npos) << o.err;
      if (fs::exists(out + "/bi.json")) {
        const Json s = read_json_file(out + "/bi.json");
        ASSERT_TRUE(s.contains("interrupted") && s.contains("points") && s.contains("runs")) << s.dump();
        EXPECT_EQ(s["interrupted"], true);
        EXPECT_EQ(s["points"], 20);
        for (std::size_t i = 0; i < s["runs"].size(); ++i) {
          EXPECT_TRUE(fs::exists(out + "/bi-" + std::to_string(i) + ".json")) << i;  // each point as it ended
        }
      }
    }
  }
  EXPECT_GT(interrupted, 0) << "no trial was interrupted before its sweep ended";
}

TEST_F(Durability, MonitorInterruptedAtRandomMomentsKeepsAValidCsvAndSummary) {
  for (int trial = 0; trial < 3; ++trial) {
    const std::string out = work_ / ("monitor-int-" + std::to_string(trial));
    fs::create_directories(out);
    const double after = uniform(0.1, 0.6);
    const int sig = pick_signal();
    SCOPED_TRACE("trial " + std::to_string(trial) + ": signal " + std::to_string(sig) + " after " + std::to_string(after) + " s");
    const Outcome o = run({"monitor", "--interval-ms", "2", "--json", "--csv", out + "/samples.csv"}, after, sig);
    EXPECT_EQ(o.code, 130) << o.err;
    const Json j = parse_json(o.out, "monitor --json");
    EXPECT_EQ(j.value("interrupted", false), true);
    EXPECT_GE(j.value("samples", 0), 1);
    EXPECT_EQ(join(report_file_problems(out)), "");
  }
}

TEST_F(Durability, BenchOnAFillingDiskFailsNamingTheFileAndKeepsCompleteReports) {
  int write_failures = 0;
  for (int trial = 0; trial < 5; ++trial) {
    // The first trial cannot hold even one point's JSON; the others fill up somewhere in the sweep.
    const long long size = trial == 0 ? 4096 : 4096 * static_cast<long long>(uniform(2, 40));
    const bool also_signal = trial >= 3;
    const double after = uniform(0.1, 1.0);
    const int sig = pick_signal();
    SCOPED_TRACE("trial " + std::to_string(trial) + ": tmpfs of " + std::to_string(size) + " bytes" +
                 (also_signal ? ", signal " + std::to_string(sig) + " after " + std::to_string(after) + " s" : ""));
    TmpfsMount disk(work_ / ("disk-" + std::to_string(trial)), size);
    if (!disk.mounted()) GTEST_SKIP() << disk.why();
    const std::string out = disk.dir() + "/results";
    const Outcome o = run({"bench", bench_config("bf", out, 3), "--quiet"}, also_signal ? std::optional<double>(after) : std::nullopt, sig);
    EXPECT_TRUE(o.code == 0 || o.code == 1 || (also_signal && o.code == 130)) << o.code << "\n" << o.err;
    if (o.code == 1) {
      ++write_failures;
      EXPECT_NE(o.err.find(out + "/bf"), std::string::npos) << o.err;  // names the file
      EXPECT_NE(o.err.find("No space left on device"), std::string::npos) << o.err;
    }
    EXPECT_EQ(join(report_file_problems(out)), "");
  }
  EXPECT_GT(write_failures, 0);
}

TEST_F(Durability, MonitorCsvOnAFillingDiskEndsWithExitOne) {
  for (int trial = 0; trial < 2; ++trial) {
    const long long size = 4096 * static_cast<long long>(uniform(1, 8));
    SCOPED_TRACE("trial " + std::to_string(trial) + ": tmpfs of " + std::to_string(size) + " bytes");
    TmpfsMount disk(work_ / ("mdisk-" + std::to_string(trial)), size);
    if (!disk.mounted()) GTEST_SKIP() << disk.why();
    const Outcome o = run({"monitor", "--interval-ms", "1", "--duration", "20", "--csv", disk.dir() + "/s.csv"});
    EXPECT_EQ(o.code, 1) << o.err;
    EXPECT_NE(o.err.find(disk.dir() + "/s.csv"), std::string::npos) << o.err;
    EXPECT_EQ(join(report_file_problems(disk.dir())), "");
  }
}

TEST_F(Durability, MakeModelLeavesNoTemporaryFileOnAFullDiskOrAnInterrupt) {
  {
    TmpfsMount disk(work_ / "model-disk", 1 << 20);  // a tiny bf16 model needs about 9 MB
    if (!disk.mounted()) GTEST_SKIP() << disk.why();
    const Outcome o = run({"make-model", disk.dir() + "/m", "--preset", "tiny"});
    EXPECT_EQ(o.code, 1) << o.err;
    EXPECT_NE(o.err.find(disk.dir() + "/m/model.safetensors"), std::string::npos) << o.err;
    EXPECT_EQ(join(report_file_problems(disk.dir() + "/m")), "");
    EXPECT_FALSE(fs::exists(disk.dir() + "/m/config.json"));
  }
  for (int trial = 0; trial < 2; ++trial) {
    const double after = uniform(0.1, 0.8);
    const int sig = pick_signal();
    SCOPED_TRACE("trial " + std::to_string(trial) + ": signal " + std::to_string(sig) + " after " + std::to_string(after) + " s");
    const std::string m = work_ / ("small-" + std::to_string(trial));
    const Outcome o = run({"make-model", m, "--preset", "small", "--dtype", "f32"}, after, sig);
    EXPECT_TRUE(o.code == 0 || o.code == 130) << o.code << "\n" << o.err;
    EXPECT_EQ(join(report_file_problems(m)), "");
    EXPECT_EQ(fs::exists(m + "/config.json"), o.code == 0);  // config.json, written last, marks a finished model
  }
}

TEST_F(Durability, GenerateJsonInterruptedPrintsWhatItHas) {
  const double after = uniform(0.15, 0.3);
  SCOPED_TRACE("SIGINT after " + std::to_string(after) + " s");
  const Outcome o = run({"generate", model_, "--ids", "1,415,5565", "--max-tokens", "2000", "--ignore-eos", "--json"}, after, SIGINT);
  ASSERT_TRUE(o.code == 0 || o.code == 130) << o.code << "\n" << o.err;
  const Json j = parse_json(o.out, "generate --json");
  ASSERT_TRUE(j.contains("interrupted")) << o.out;
  EXPECT_EQ(j["interrupted"], o.code == 130);
  if (o.code == 130) {
    EXPECT_EQ(j["finish_reason"], "interrupted");
    EXPECT_LT(j["completion_tokens"].get<int>(), 2000);
    EXPECT_EQ(j["ids"].size(), j["completion_tokens"].get<std::size_t>());
  }
}

}  // namespace
}  // namespace plexus
