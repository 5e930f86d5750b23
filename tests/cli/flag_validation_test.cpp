// Every flag checked the same way in every command (issue 13): enums whether or not a plan is
// made, ranges, non-finite numbers, duplicates, options given twice, "did you mean".
#include <gtest/gtest.h>

#include "cli_run.h"
#include "core/json.h"

namespace plexus {
namespace {

using testing::expect_usage_error;
using testing::run_no_gpu;
using testing::shell_quote;
using testing::TempDir;

class FlagValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = shell_quote(testing::tiny_model(dir_));
    testing::write_file(dir_ / "in.jsonl", "{\"id\": 1, \"ids\": [1, 2]}\n");
  }
  // The same flags after each run command's own required arguments.
  std::vector<std::string> run_commands(const std::string& flags) const {
    return {"generate " + model_ + " --ids 1 " + flags, "perplexity " + model_ + " --ids 1,2 " + flags,
            "batch " + model_ + " --input " + shell_quote(dir_ / "in.jsonl") + " --output " + shell_quote(dir_ / "out.jsonl") +
                " " + flags};
  }
  TempDir dir_{"flags"};
  std::string model_;
};

TEST_F(FlagValidation, StrategyAndDtypeAreCheckedWithoutDeviceFlags) {
  for (const std::string& c : run_commands("--strategy bogus")) expect_usage_error(run_no_gpu(c), c, {"--strategy", "'bogus'", "balanced_low_0"});
  for (const std::string& c : run_commands("--dtype bogus")) expect_usage_error(run_no_gpu(c), c, {"--dtype", "'bogus'", "bfloat16"});
  expect_usage_error(run_no_gpu("plan " + model_ + " --strategy balancd"), "plan", {"did you mean 'balanced'?"});
  // A real dtype other than the checkpoint's: runs do not convert, with or without devices.
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --dtype float32"), "generate --dtype float32",
                     {"--dtype float32", "checkpoint's own dtype (bfloat16)"});
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --dtype float32 --virtual-devices 2"), "generate --dtype float32 (devices)",
                     {"--dtype float32", "checkpoint's own dtype (bfloat16)"});
  EXPECT_EQ(run_no_gpu("generate " + model_ + " --ids 1 --max-tokens 1 --dtype bf16").exit_code, 0);
}

TEST_F(FlagValidation, SamplingFlagsHaveRangesAndFiniteValues) {
  for (const std::string flags : {"--top-k -5", "--top-p 1.5", "--top-p 0", "--temperature inf", "--temperature nan",
                                   "--temperature 1e9", "--max-tokens -1", "--seed -3"}) {
    const std::string flag = flags.substr(0, flags.find(" "));
    for (const std::string& c : {"generate " + model_ + " --ids 1 " + flags,
                                 "batch " + model_ + " --input " + shell_quote(dir_ / "in.jsonl") + " --output " +
                                     shell_quote(dir_ / "out.jsonl") + " " + flags}) {
      expect_usage_error(run_no_gpu(c), c, {flag});
    }
  }
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --top-p 1.5"), "top-p", {"more than 0 and at most 1", "1.5"});
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --temperature inf"), "inf", {"finite", "'inf'"});
  EXPECT_FALSE(testing::run_command("test -e " + shell_quote(dir_ / "out.jsonl")).exit_code == 0) << "batch wrote output";
}

// Issue 32 item 6: a temperature below 1e-5 (runtime/sampler.h kGreedyBelowTemperature) is
// greedy in generate and in batch (flag and request lines): 1e-310 used to make every token the
// vocabulary's last id in batch, and the CLI refused 5e-324 as "not finite".
TEST_F(FlagValidation, TemperaturesBelowTheThresholdAreGreedy) {
  const testing::ProcessResult greedy = run_no_gpu("generate " + model_ + " --ids 1,2 --max-tokens 6 --json --greedy");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  const Json want = Json::parse(greedy.out)["ids"];
  ASSERT_EQ(want.size(), 6u);
  EXPECT_NE(want, Json({299, 299, 299, 299, 299, 299}));
  for (const std::string t : {"1e-310", "5e-324", "4e-324", "1e-400", "9.9e-6", "0"}) {
    const testing::ProcessResult r = run_no_gpu("generate " + model_ + " --ids 1,2 --max-tokens 6 --json --temperature " + t);
    ASSERT_EQ(r.exit_code, 0) << t << "\n" << r.err;
    EXPECT_EQ(Json::parse(r.out)["ids"], want) << "--temperature " << t;
  }
  testing::write_file(dir_ / "tiny_t.jsonl",
                      "{\"id\": 1, \"ids\": [1, 2], \"temperature\": 1e-310}\n{\"id\": 2, \"ids\": [1, 2], \"temperature\": 5e-324}\n"
                      "{\"id\": 3, \"ids\": [1, 2]}\n");
  const std::string out = dir_ / "tiny_t_out.jsonl";
  const testing::ProcessResult b = run_no_gpu("batch " + model_ + " --input " + shell_quote(dir_ / "tiny_t.jsonl") + " --output " +
                                              shell_quote(out) + " --max-tokens 6 --temperature 5e-324");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const testing::ProcessResult lines = testing::run_command("cat " + shell_quote(out));  // one result a line
  int n = 0;
  for (std::size_t at = 0, end; (end = lines.out.find('\n', at)) != std::string::npos; at = end + 1, ++n) {
    EXPECT_EQ(Json::parse(lines.out.substr(at, end - at))["ids"], want) << lines.out.substr(at, end - at);
  }
  EXPECT_EQ(n, 3) << lines.out;
  // Top-p as small as a double gets is a valid top-p (the most likely token), not "not finite".
  const testing::ProcessResult p = run_no_gpu("generate " + model_ + " --ids 1,2 --max-tokens 6 --json --temperature 1 --top-p 5e-324");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(Json::parse(p.out)["ids"], want);
}

TEST_F(FlagValidation, ThreadsAreHonouredOnEveryDeviceCount) {
  for (const std::string devices : {"", "--virtual-devices 2", "--virtual-devices 4"}) {
    const testing::ProcessResult r = run_no_gpu("generate " + model_ + " --ids 1,2 --max-tokens 2 --json --threads 1 " + devices);
    ASSERT_EQ(r.exit_code, 0) << devices << "\n" << r.err;
    EXPECT_EQ(Json::parse(r.out)["threads"], 1) << devices;
  }
  const testing::ProcessResult three = run_no_gpu("generate " + model_ + " --ids 1,2 --max-tokens 2 --json --threads 3 --virtual-devices 2");
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(Json::parse(three.out)["threads"], 3);
}

TEST_F(FlagValidation, WaitPolicyIsCheckedAndReported) {
  for (const std::string& c : run_commands("--wait busy")) expect_usage_error(run_no_gpu(c), c, {"--wait", "spin, passive or auto", "'busy'"});
  for (const std::string wait : {"spin", "passive", "auto"}) {
    const testing::ProcessResult r = run_no_gpu("generate " + model_ + " --ids 1,2 --max-tokens 2 --json --threads 2 --wait " + wait);
    ASSERT_EQ(r.exit_code, 0) << wait << "\n" << r.err;
    EXPECT_EQ(Json::parse(r.out)["wait"], wait);
  }
}

TEST_F(FlagValidation, EveryWaitPolicyGeneratesTheSameTokens) {
  // Sampled (so that any difference in the logits shows), on 2 threads and on virtual devices.
  for (const std::string devices : {"", "--virtual-devices 2"}) {
    std::string first;
    for (const std::string wait : {"spin", "passive", "auto"}) {
      const testing::ProcessResult r = run_no_gpu("generate " + model_ + " --ids 1,2,3 --max-tokens 12 --temperature 1 --seed 5 --json --threads 2 --wait " +
                                                  wait + " " + devices);
      ASSERT_EQ(r.exit_code, 0) << wait << "\n" << r.err;
      const std::string ids = Json::parse(r.out)["ids"].dump();
      if (first.empty()) first = ids;
      EXPECT_EQ(ids, first) << wait << " " << devices;
    }
  }
}

TEST_F(FlagValidation, ThreadsAreNeverRaisedForReplicas) {
  // Four replicas cannot compute on one thread: refused (it was raised to 4 without a word).
  const std::string c = "batch " + model_ + " --input " + shell_quote(dir_ / "in.jsonl") + " --output " +
                        shell_quote(dir_ / "out.jsonl") + " --threads 1 --replicas 4";
  expect_usage_error(run_no_gpu(c), c, {"--threads 1", "4 replicas", "--threads 4 or more"});
  const testing::ProcessResult ok = run_no_gpu("batch " + model_ + " --input " + shell_quote(dir_ / "in.jsonl") + " --output " +
                                               shell_quote(dir_ / "out.jsonl") + " --threads 2 --replicas 2 --max-tokens 2");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(FlagValidation, DevicesListedTwiceAreRefusedEverywhere) {
  std::vector<std::string> commands = run_commands("--devices 0,0 --max-memory 0=1GiB,1=1GiB");
  commands.push_back("plan " + model_ + " --devices 1,0,1 --max-memory 0=1GiB,1=1GiB");
  commands.push_back("doctor --virtual-devices 2 --devices 0,0");
  commands.push_back("monitor --devices 0,0 --duration 0.1");
  for (const std::string& c : commands) expect_usage_error(run_no_gpu(c), c, {"--devices", "listed twice"});
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --devices -1"), "negative device", {"--devices", "between 0 and 1023"});
}

TEST_F(FlagValidation, OptionsGivenTwiceAreRefused) {
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --ids 3"), "--ids twice", {"'--ids' given twice", "'1', then '3'"});
  expect_usage_error(run_no_gpu("perplexity " + model_ + " --ids 1,2 --threads 1 --threads=2"), "--threads twice", {"'--threads' given twice"});
  expect_usage_error(run_no_gpu("plan " + model_ + " --context 8 --context 16"), "--context twice", {"'--context' given twice"});
  // --set is declared repeatable: two are fine (the error is the unknown key, not the repetition).
  testing::write_file(dir_ / "b.yaml", "model: m\nscenario: {prompts_ids: [[1]]}\n");
  const testing::ProcessResult sets = run_no_gpu("bench " + shell_quote(dir_ / "b.yaml") + " --set scenario.seed=1 --set scenario.sed=2");
  expect_usage_error(sets, "bench --set twice", {"scenario.sed", "did you mean 'scenario.seed'?"});
  EXPECT_EQ(sets.err.find("given twice"), std::string::npos) << sets.err;
}

TEST_F(FlagValidation, UnknownOptionsAndCommandsSuggestTheNearest) {
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --max-tokns 3"), "typo", {"'--max-tokns'", "did you mean '--max-tokens'?"});
  expect_usage_error(run_no_gpu("monitor --intervl-ms 5"), "typo", {"did you mean '--interval-ms'?"});
  expect_usage_error(run_no_gpu("genrate " + model_), "command typo", {"unknown command 'genrate'", "did you mean 'generate'?"});
  expect_usage_error(run_no_gpu("benhc x.yaml"), "command typo", {"did you mean 'bench'?"});
}

TEST_F(FlagValidation, PlanningRangesAndContradictions) {
  for (const std::string& c : run_commands("--context -1")) expect_usage_error(run_no_gpu(c), c, {"--context", "between 0 and"});
  for (const std::string& c : run_commands("--max-sequences 0")) expect_usage_error(run_no_gpu(c), c, {"--max-sequences", "between 1 and"});
  // The old spelling is the same option.
  for (const std::string& c : run_commands("--batch 0")) expect_usage_error(run_no_gpu(c), c, {"--max-sequences", "between 1 and"});
  for (const std::string& c : run_commands("--virtual-devices 2 --max-memory 0=1GiB")) {
    expect_usage_error(run_no_gpu(c), c, {"--max-memory and --virtual-devices"});
  }
  expect_usage_error(run_no_gpu("plan " + model_ + " --max-memory 0=lots"), "plan", {"--max-memory"});
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --max-memory 0=lots"), "generate", {"--max-memory"});
  expect_usage_error(run_no_gpu("generate " + model_ + " --ids 1 --device-map auto --strategy stages"), "two strategies",
                     {"--device-map auto", "--strategy stages"});
  expect_usage_error(run_no_gpu("plan " + model_ + " --device-map /no/such/map.json"), "missing map",
                     {"--device-map", "/no/such/map.json", "not found", "auto"});
  for (const std::string flags : {"--interval-ms inf", "--duration inf", "--duration nan", "--idle-baseline inf"}) {
    expect_usage_error(run_no_gpu("monitor " + std::string(flags)), flags, {"finite"});
  }
}

TEST_F(FlagValidation, MonitorRefusesGpusThatAreNotThere) {
  expect_usage_error(testing::run_four_gpus("monitor --devices 5 --duration 0.1 --json"), "GPU 5 of 4",
                     {"--devices", "no GPU 5", "GPUs here: 0,1,2,3"});
  expect_usage_error(run_no_gpu("monitor --devices 0 --duration 0.1 --json"), "no GPU at all", {"no GPU 0", "no GPU was detected"});
  const testing::ProcessResult ok = testing::run_four_gpus("monitor --devices 1,3 --duration 0.2 --interval-ms 50 --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  std::vector<int> watched;
  const Json summary = Json::parse(ok.out);
  for (const Json& d : summary["devices"]) {
    if (d["index"].is_number()) watched.push_back(d["index"].get<int>());
  }
  EXPECT_EQ(watched, (std::vector<int>{1, 3})) << ok.out;
}

TEST_F(FlagValidation, PerplexityFileMustBeUtf8) {
  testing::write_file(dir_ / "latin1.txt", "caf\xE9 au lait\n");
  const std::string file = dir_ / "latin1.txt";
  expect_usage_error(run_no_gpu("perplexity " + model_ + " --file " + shell_quote(file)), "latin-1 file",
                     {"--file " + file, "not valid UTF-8", "byte offset 3"});
  expect_usage_error(run_no_gpu("perplexity " + model_ + " --text " + shell_quote("caf\xE9")), "latin-1 text",
                     {"--text", "byte offset 3"});
}

TEST_F(FlagValidation, BenchConfigChecksTheSameWay) {
  const std::string cfg = dir_ / "dup.yaml";
  testing::write_file(cfg, "name: dup\nmodel: " + model_ + "\nscenario:\n  prompts_ids: [[1, 2]]\n  batch_size: 1\n  batch_size: 2\n");
  expect_usage_error(run_no_gpu("bench " + shell_quote(cfg)), "duplicate key", {cfg + ":6: scenario.batch_size: duplicate key"});
  testing::write_file(cfg, "model: " + model_ + "\nbackend:\n  device_ids: [0, 0]\nscenario: {prompts_ids: [[1]]}\n");
  expect_usage_error(run_no_gpu("bench " + shell_quote(cfg)), "device_ids twice", {cfg + ":3: backend.device_ids: device 0 is listed twice"});
  testing::write_file(cfg, "model: " + model_ + "\nbackend:\n  dtype: int3\nscenario: {prompts_ids: [[1]]}\n");
  expect_usage_error(run_no_gpu("bench " + shell_quote(cfg)), "dtype", {cfg + ":3: backend.dtype: unknown dtype 'int3'", "bfloat16"});
  testing::write_file(cfg, "model: " + model_ + "\nscenario: {prompts_ids: [[1]]}\n");
  expect_usage_error(run_no_gpu("bench " + shell_quote(cfg) + " --set backend.device_ids=[1,1]"), "--set device_ids twice",
                     {"--set backend.device_ids: device 1 is listed twice"});
  expect_usage_error(run_no_gpu("bench " + shell_quote(cfg) + " --set scenario.temperature=.inf"), "temperature inf",
                     {"scenario.temperature"});
}

}  // namespace
}  // namespace plexus
