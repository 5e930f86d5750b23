// Advice that works (issue 13): each command line or YAML block plexus prints as a suggestion is
// cut out of its output and run as printed, in a real process.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "cli_run.h"
#include "core/json.h"

namespace plexus {
namespace {

using testing::ProcessResult;
using testing::run_four_gpus;
using testing::run_no_gpu;
using testing::shell_quote;
using testing::TempDir;

// The line after `heading` in `text` (trimmed), or "".
std::string line_after(const std::string& text, const std::string& heading) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(heading) == std::string::npos) continue;
    std::string next;
    std::getline(in, next);
    return next.substr(std::min(next.find_first_not_of(' '), next.size()));
  }
  return "";
}

// The indented block after `heading`, one indentation level removed.
std::string block_after(const std::string& text, const std::string& heading) {
  std::istringstream in(text);
  std::string out;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (inside) {
      if (line.rfind("  ", 0) != 0) break;
      out += line.substr(2) + "\n";
    } else if (line.find(heading) != std::string::npos) {
      inside = true;
    }
  }
  return out;
}

// The first match of `pattern`'s group 1 in `text`, or "".
std::string capture(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? m[1].str() : "";
}

class Advice : public ::testing::Test {
 protected:
  void SetUp() override { model_ = shell_quote(testing::tiny_model(dir_)); }

  // A benchmark file: the printed backend block, a tiny scenario, reports in the temp dir.
  std::string bench_file(const std::string& name, const std::string& backend_yaml) {
    const std::string path = dir_ / (name + ".yaml");
    testing::write_file(path, "name: " + name + "\nmodel: " + model_ + "\n" + backend_yaml +
                                  "scenario: {prompts_ids: [[1, 2, 3]], num_samples: 1, warmup_samples: 0, max_new_tokens: 2}\n"
                                  "output: {dir: " + shell_quote(dir_ / "reports") + ", formats: [json]}\n");
    return shell_quote(path);
  }
  TempDir dir_{"advice"};
  std::string model_;
};

TEST_F(Advice, DoctorFlagsAndYamlForVirtualDevicesAreAcceptedAsPrinted) {
  const ProcessResult doctor = run_no_gpu("doctor --virtual-devices 2 --virtual-device-memory 4GiB");
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err;
  const std::string flags = line_after(doctor.out, "plexus plan / generate flags");
  ASSERT_FALSE(flags.empty()) << doctor.out;
  for (const std::string& c : {"plan " + model_ + " " + flags, "generate " + model_ + " --ids 1,2 --max-tokens 2 " + flags,
                               "perplexity " + model_ + " --ids 1,2,3 " + flags}) {
    const ProcessResult r = run_no_gpu(c);
    EXPECT_EQ(r.exit_code, 0) << "doctor printed: " << flags << "\n" << c << "\n" << r.err;
  }
  const std::string yaml = block_after(doctor.out, "benchmark YAML:");
  ASSERT_NE(yaml.find("backend:"), std::string::npos) << doctor.out;
  const ProcessResult bench = run_no_gpu("bench --quiet " + bench_file("virtual", yaml));
  EXPECT_EQ(bench.exit_code, 0) << "doctor printed:\n" << yaml << bench.err;

  // The same advice in --json.
  const ProcessResult json = run_no_gpu("doctor --virtual-devices 2 --virtual-device-memory 4GiB --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json j = Json::parse(json.out);
  EXPECT_EQ(j["plan_flags"], flags);
  EXPECT_EQ(j["yaml_backend"], yaml);
}

TEST_F(Advice, DoctorFlagsAndYamlForGpusAreAcceptedAsPrinted) {
  const ProcessResult doctor = run_four_gpus("doctor --devices 0,1");
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err;
  const std::string flags = line_after(doctor.out, "plexus plan / generate flags");
  ASSERT_NE(flags.find("--devices 0,1"), std::string::npos) << doctor.out;
  for (const std::string& c : {"plan " + model_ + " " + flags, "generate " + model_ + " --ids 1,2 --max-tokens 2 " + flags}) {
    const ProcessResult r = run_four_gpus(c);
    EXPECT_EQ(r.exit_code, 0) << "doctor printed: " << flags << "\n" << c << "\n" << r.err;
  }
  const std::string yaml = block_after(doctor.out, "benchmark YAML:");
  // The fake's GPUs have no CUDA runtime behind them: bench refuses GPUs it cannot compute on
  // unless told to run their budgets on virtual CPU devices.
  EXPECT_EQ(run_four_gpus("bench --quiet " + bench_file("gpus", yaml)).exit_code, 2);
  const ProcessResult bench = run_four_gpus("bench --quiet --allow-cpu-devices " + bench_file("gpus", yaml));
  EXPECT_EQ(bench.exit_code, 0) << "doctor printed:\n" << yaml << bench.err;
}

// Weight bytes of the model's plan in `dtype`.
long long model_bytes(const std::string& model, const std::string& dtype) {
  const ProcessResult r = run_no_gpu("plan " + model + " --context 0 --max-memory 0=1GiB --json --dtype " + dtype);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? Json::parse(r.out)["model_bytes"].get<long long>() : 0;
}

TEST_F(Advice, PlanDoesNotFitAdviceWorks) {
  // A budget between the int8 and the bfloat16 size of the weights.
  const long long bf16 = model_bytes(model_, "bfloat16"), int8 = model_bytes(model_, "int8");
  ASSERT_LT(int8, bf16);
  const std::string budget = " --context 0 --max-memory 0=" + std::to_string((bf16 + int8) / 2);
  const ProcessResult plan = run_no_gpu("plan " + model_ + budget);
  ASSERT_EQ(plan.exit_code, 2) << plan.err;  // refused at plan time
  const std::string suggested = capture(plan.err, "`plexus (plan [^`]*)`");
  ASSERT_FALSE(suggested.empty()) << plan.err;
  const std::string extra = suggested.substr(std::string("plan").size());
  const ProcessResult planned = run_no_gpu("plan " + model_ + budget + extra);
  EXPECT_EQ(planned.exit_code, 0) << "plan suggested `" << suggested << "`\n" << planned.err;

  // A run cannot change the checkpoint's dtype, so a run that does not fit offers no --dtype; the
  // smallest budgets it prints, followed, run (the layers stream in from cpu).
  const ProcessResult run = run_no_gpu("generate " + model_ + " --ids 1 --max-tokens 2 --max-memory 0=2MiB");
  ASSERT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(run.err.find("--dtype"), std::string::npos) << run.err;
  const std::string smallest = capture(run.err, "are (--max-memory [^ ;]+)");
  ASSERT_FALSE(smallest.empty()) << run.err;
  const ProcessResult followed = run_no_gpu("generate " + model_ + " --ids 1 --max-tokens 2 " + smallest);
  EXPECT_EQ(followed.exit_code, 0) << smallest << "\n" << followed.err;
}

// Budgets a refusal prints are pasted back as printed (no space inside, rounded up) and run.
TEST_F(Advice, BudgetAdviceIsAcceptedAsPrinted) {
  const std::string run_flags = " --context 64 --batch-tokens 8";
  // The smallest budgets of a stages plan.
  const ProcessResult tight = run_no_gpu("plan " + model_ + " --strategy stages --max-memory 0=40KiB,cpu=4MiB" + run_flags);
  ASSERT_EQ(tight.exit_code, 2) << tight.err;
  EXPECT_EQ(tight.err.find("--virtual-device-memory"), std::string::npos) << tight.err;
  const std::string smallest = capture(tight.err, "are (--max-memory [^ ;]+)");
  ASSERT_FALSE(smallest.empty()) << tight.err;
  EXPECT_EQ(run_no_gpu("plan " + model_ + " --strategy stages " + smallest + run_flags).exit_code, 0) << smallest;
  const ProcessResult ran = run_no_gpu("generate " + model_ + " --ids 1 --max-tokens 2 --strategy stages " + smallest + run_flags);
  EXPECT_EQ(ran.exit_code, 0) << smallest << "\n" << ran.err;

  // A device map over a device's budget: "raise its --max-memory entry to 0=SIZE".
  const std::string map = dir_ / "one_device_map.json";
  const ProcessResult planned = run_no_gpu("plan " + model_ + " --virtual-devices 1 --json" + run_flags);
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  testing::write_file(map, planned.out);
  const std::string with_map = "generate " + model_ + " --ids 1 --max-tokens 2 --device-map " + shell_quote(map) + run_flags;
  const ProcessResult over = run_no_gpu(with_map + " --max-memory 0=40KiB");
  ASSERT_EQ(over.exit_code, 2) << over.err;
  const std::string entry = capture(over.err, "raise its --max-memory entry to ([^ ,]+)");
  ASSERT_FALSE(entry.empty()) << over.err;
  const ProcessResult followed = run_no_gpu(with_map + " --max-memory " + entry);
  EXPECT_EQ(followed.exit_code, 0) << entry << "\n" << followed.err;
}

TEST_F(Advice, DidYouMeanSuggestionsRun) {
  const ProcessResult typo = run_no_gpu("generate " + model_ + " --ids 1 --max-tokns 2");
  const std::string option = capture(typo.err, "did you mean '([^']+)'");
  ASSERT_EQ(option, "--max-tokens") << typo.err;
  EXPECT_EQ(run_no_gpu("generate " + model_ + " --ids 1 " + option + " 2").exit_code, 0);

  const ProcessResult command = run_no_gpu("estimat " + model_);
  const std::string name = capture(command.err, "did you mean '([^']+)'");
  ASSERT_EQ(name, "estimate") << command.err;
  EXPECT_EQ(run_no_gpu(name + " " + model_).exit_code, 0);

  const std::string cfg = bench_file("set", "");
  const ProcessResult set = run_no_gpu("bench --quiet " + cfg + " --set scenario.max_new_tokns=1");
  const std::string key = capture(set.err, "did you mean '([^']+)'");
  ASSERT_EQ(key, "scenario.max_new_tokens") << set.err;
  const ProcessResult fixed = run_no_gpu("bench --quiet " + cfg + " --set " + key + "=1");
  EXPECT_EQ(fixed.exit_code, 0) << fixed.err;
}

TEST_F(Advice, BatchAdviceRuns) {
  const std::string in = shell_quote(dir_ / "in.jsonl");
  testing::write_file(dir_ / "in.jsonl", "{\"id\": 1, \"ids\": [1, 2]}\nnot json\n");
  const std::string base = "batch " + model_ + " --input " + in + " --max-tokens 2 --output ";
  // A bad line: "pass --on-bad-line skip".
  const ProcessResult bad = run_no_gpu(base + shell_quote(dir_ / "a.jsonl"));
  ASSERT_EQ(bad.exit_code, 2) << bad.err;
  const std::string skip = capture(bad.err, "pass (--on-bad-line [a-z]+)");
  ASSERT_EQ(skip, "--on-bad-line skip") << bad.err;
  const ProcessResult skipped = run_no_gpu(base + shell_quote(dir_ / "a.jsonl") + " " + skip);
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  // Replicas that do not divide the devices: the suggested --virtual-devices does.
  testing::write_file(dir_ / "in.jsonl", "{\"id\": 1, \"ids\": [1, 2]}\n{\"id\": 2, \"ids\": [3]}\n");
  const ProcessResult uneven = run_no_gpu(base + shell_quote(dir_ / "b.jsonl") + " --replicas 2 --virtual-devices 3");
  ASSERT_NE(uneven.exit_code, 0) << uneven.err;
  const std::string devices = capture(uneven.err, "e\\.g\\. (--virtual-devices [0-9]+)");
  ASSERT_FALSE(devices.empty()) << uneven.err;
  const ProcessResult even = run_no_gpu(base + shell_quote(dir_ / "b.jsonl") + " --replicas 2 " + devices);
  EXPECT_EQ(even.exit_code, 0) << devices << "\n" << even.err;
}

TEST_F(Advice, DeviceMapAutoIsTheAutoStrategy) {
  const ProcessResult map = run_no_gpu("plan " + model_ + " --max-memory 0=1GiB,1=1GiB --device-map auto --json");
  const ProcessResult strategy = run_no_gpu("plan " + model_ + " --max-memory 0=1GiB,1=1GiB --strategy auto --json");
  ASSERT_EQ(map.exit_code, 0) << map.err;
  ASSERT_EQ(strategy.exit_code, 0) << strategy.err;
  EXPECT_EQ(Json::parse(map.out)["strategy"], "auto");
  EXPECT_EQ(Json::parse(map.out)["device_map"], Json::parse(strategy.out)["device_map"]);
  for (const std::string& c : {"generate " + model_ + " --ids 1,2 --max-tokens 2 --device-map auto",
                               "generate " + model_ + " --ids 1,2 --max-tokens 2 --device-map auto --max-memory 0=1GiB,1=1GiB",
                               "perplexity " + model_ + " --ids 1,2,3 --device-map balanced --virtual-devices 2"}) {
    const ProcessResult r = run_no_gpu(c);
    EXPECT_EQ(r.exit_code, 0) << c << "\n" << r.err;
  }
  const ProcessResult bench = run_no_gpu("bench --quiet " + bench_file("auto", "backend: {device_map: auto, virtual_devices: 2}\n"));
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
}

}  // namespace
}  // namespace plexus
