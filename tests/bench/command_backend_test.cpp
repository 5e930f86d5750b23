// `backend.type: command` and `pytorch` in `plexus bench`: any program under the monitor, J/token
// from the token line it prints (null, with the reason, without one), the engine in every report,
// exit 2 for a command or a Python package that is not there; hf_runner.py's argument handling.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "bench/command_run.h"
#include "core/json.h"
#include "core/mmap_file.h"
#include "durability_util.h"
#include "monitor/child_process.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The CSV's header and first row, cell by cell, as a map.
std::map<std::string, std::string> first_csv_row(const std::string& path) {
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const auto names = testing::csv_cells(header), cells = testing::csv_cells(row);
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < names.size() && i < cells.size(); ++i) out[names[i]] = cells[i];
  return out;
}

// Whether python3 imports `module` (asked once per module: python3 can take a second to start).
bool python_has(const std::string& module) {
  static std::map<std::string, bool> known;
  if (!known.count(module)) known[module] = std::system(("python3 -c 'import " + module + "' >/dev/null 2>&1").c_str()) == 0;
  return known[module];
}

class CommandBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    // One GPU at a steady 150 W: its counter is the exact integral, so energy is 150 W × the window.
    ::setenv("PLEXUS_NVML_LIBRARY", FAKE_NVML_LIBRARY, 1);
    ::setenv("PLEXUS_FAKE_NVML_SCRIPT", (std::string(PLEXUS_SOURCE_DIR) + "/tests/monitor/data/two_gpus_ramp.json").c_str(), 1);
    ::setenv("PLEXUS_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so", 1);
  }
  std::string config(const std::string& name, const std::string& yaml) {
    const std::string path = work_.path() + "/" + name + ".yaml";
    std::ofstream(path) << "name: " << name << "\n" << yaml << "monitor: {interval_ms: 20}\noutput: {dir: " << out() << "}\n";
    return path;
  }
  std::string out() const { return work_.path() + "/results"; }
  testing::TempDir work_{"bench-command"};
};

TEST_F(CommandBackend, JoulesPerTokenAreTheEnergyOverTheTokensThePrintedLineGives) {
  const std::string cfg = config("tokens",
                                 "backend:\n  type: command\n  command: [sh, -c, 'sleep 0.2; echo hello; "
                                 "echo \"{\\\"plexus_tokens\\\": {\\\"input\\\": 10, \\\"output\\\": 30}}\"; "
                                 "echo \"{\\\"plexus_tokens\\\": {\\\"output\\\": 10}}\"']\n");
  const auto r = run_plexus("bench " + shell_quote(cfg));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const Json j = read_json_file(out() + "/tokens.json");
  EXPECT_EQ(j["engine"], "sh");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["command"]["exit_code"], 0);
  EXPECT_EQ(j["tokens"]["input"], 10);
  EXPECT_EQ(j["tokens"]["output"], 40);  // both lines, summed
  EXPECT_EQ(j["tokens"]["lines"], 2);
  const double total = j["energy"]["total_j"].get<double>();
  EXPECT_GT(total, 0.2 * (150 + 200) * 0.9);  // both GPUs over at least the command's 0.2 s
  EXPECT_DOUBLE_EQ(j["energy"]["j_per_token"].get<double>(), total / 40);
  EXPECT_FALSE(j["energy"].contains("j_per_token_note"));
  const auto row = first_csv_row(out() + "/tokens.csv");
  EXPECT_EQ(row.at("engine"), "sh");
  EXPECT_NEAR(std::stod(row.at("energy_j_per_token")), total / 40, 1e-9 * total);
  EXPECT_NE(read_text(out() + "/tokens.html").find("engine sh"), std::string::npos);
}

TEST_F(CommandBackend, NoTokenLineGivesNullJoulesPerTokenAndSaysWhy) {
  const std::string cfg = config("silent", "backend:\n  type: command\n  engine: my-engine\n  command: [sleep, '0.1']\n");
  const auto r = run_plexus("bench " + shell_quote(cfg));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = read_json_file(out() + "/silent.json");
  EXPECT_EQ(j["engine"], "my-engine");
  EXPECT_TRUE(j["tokens"].is_null());
  EXPECT_TRUE(j["energy"]["total_j"].is_number());  // the energy was measured ...
  EXPECT_TRUE(j["energy"]["j_per_token"].is_null());  // ... J/token is not zero but unknown
  const std::string why = j["energy"]["j_per_token_note"].get<std::string>();
  EXPECT_NE(why.find("printed no token line"), std::string::npos) << why;
  EXPECT_EQ(first_csv_row(out() + "/silent.csv").at("energy_j_per_token"), "");
  EXPECT_NE(read_text(out() + "/silent.html").find("printed no token line"), std::string::npos);
  EXPECT_NE(r.err.find("J/token is null"), std::string::npos) << r.err;
}

TEST_F(CommandBackend, AFailingCommandIsRecordedWithItsExitCode) {
  const std::string cfg = config("fails", "backend:\n  type: command\n  command: [sh, -c, 'exit 4']\n");
  const auto r = run_plexus("bench " + shell_quote(cfg));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const Json j = read_json_file(out() + "/fails.json");
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["command"]["exit_code"], 4);
  EXPECT_NE(j["error"].get<std::string>().find("exited with 4"), std::string::npos);
}

TEST_F(CommandBackend, BadCommandsAndConfigurationsExitTwo) {
  auto exit_of = [&](const std::string& name, const std::string& yaml) {
    const auto r = run_plexus("bench " + shell_quote(config(name, yaml)));
    return std::make_pair(r.exit_code, r.err);
  };
  const auto missing = exit_of("missing", "backend:\n  type: command\n  command: [plexus-no-such-program, --x]\n");
  EXPECT_EQ(missing.first, 2);
  EXPECT_NE(missing.second.find("plexus-no-such-program"), std::string::npos) << missing.second;
  EXPECT_EQ(exit_of("string", "backend:\n  type: command\n  command: 'sh -c true'\n").first, 2);
  EXPECT_EQ(exit_of("nocommand", "backend:\n  type: command\n").first, 2);
  EXPECT_EQ(exit_of("scenario", "backend:\n  type: command\n  command: [true]\nscenario: {prompts: [hi]}\n").first, 2);
  EXPECT_EQ(exit_of("wrongtype", "model: x\nbackend:\n  command: [true]\nscenario: {prompts: [hi]}\n").first, 2);
  EXPECT_EQ(exit_of("badtype", "backend:\n  type: vllm-ish\n  command: [true]\n").first, 2);
}

// The energy suite's shape: without transformers (or torch) here, exit 2 naming what is missing.
TEST_F(CommandBackend, PytorchConfigsSayWhatIsMissing) {
  if (python_has("torch") && python_has("transformers")) GTEST_SKIP() << "torch and transformers are installed here";
  const std::string cfg = config("suite",
                                 "model: meta-llama/Llama-3.2-1B\nbackend:\n  type: pytorch\n  device_ids: []\n"
                                 "  device_map: auto\n  max_memory: {0: 10GiB, cpu: 64GiB}\n  torch_dtype: bfloat16\n"
                                 "scenario: {prompts: [Hello], max_new_tokens: 8}\n");
  const auto r = run_plexus("bench " + shell_quote(cfg));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("backend.type pytorch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(python_has("torch") ? "transformers" : "torch"), std::string::npos) << r.err;
  EXPECT_EQ(run_plexus("bench " + shell_quote(config("dtype", "model: m\nbackend: {torch_dtype: bfloat16}\nscenario: {prompts: [hi]}\n"))).exit_code, 2);
}

TEST(TokenLines, EveryLineOfTheShapeCountsAndOthersAreSaid) {
  const bench::TokenLines none = bench::read_token_lines("hello\n{\"other\": 1}\n");
  EXPECT_FALSE(none.tokens);
  EXPECT_TRUE(none.problem.empty());
  const bench::TokenLines two = bench::read_token_lines(
      "x\n  {\"plexus_tokens\": {\"input\": 3, \"output\": 5}}\r\n{\"plexus_tokens\": {\"output\": 7}, \"extra\": true}\n");
  ASSERT_TRUE(two.tokens);
  EXPECT_EQ(two.tokens->input, 3);
  EXPECT_EQ(two.tokens->output, 12);
  EXPECT_EQ(two.tokens->lines, 2);
  for (const char* bad : {"{\"plexus_tokens\": {\"input\": 3}}", "{\"plexus_tokens\": {\"output\": -1}}",
                          "{\"plexus_tokens\": {\"output\": 1.5}}", "{\"plexus_tokens\": 4}", "{\"plexus_tokens\": {\"output\": 1"}) {
    const bench::TokenLines r = bench::read_token_lines(bad);
    EXPECT_FALSE(r.tokens) << bad;
    EXPECT_NE(r.problem.find(bad), std::string::npos) << bad;
  }
}

// hf_runner.py's settings, without torch or transformers (--dry-run imports neither).
TEST(HfRunner, ArgumentsBecomeTransformersSettings) {
  // The system's interpreter when there is one (a version manager's shim can take seconds to start).
  const std::string python = ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  if (std::system((python + " -c '' >/dev/null 2>&1").c_str()) != 0) GTEST_SKIP() << "no python3";
  const std::string script = std::string(PLEXUS_SOURCE_DIR) + "/scripts/hf_runner.py";
  const std::string out = ::testing::TempDir() + "/hf_runner_" + std::to_string(::getpid()) + ".json";
  const std::string dataset = ::testing::TempDir() + "/hf_runner_" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(dataset) << "{\"prompt\": \"from the dataset\"}\n\n";
  const auto run = [&](const std::string& args) {
    return std::system((python + " " + shell_quote(script) + " " + args + " >" + out + " 2>/dev/null").c_str());
  };
  ASSERT_EQ(run("--model m --device-ids 2,3 --max-memory 3=10GiB,cpu=64GiB --torch-dtype bfloat16 --prompt hi "
                "--dataset " + dataset + " --num-samples 3 --warmup-samples 0 --ignore-eos --dry-run"), 0);
  const Json j = Json::parse(read_text(out));
  EXPECT_EQ(j["cuda_visible_devices"], "2,3");
  EXPECT_EQ(j["load"]["max_memory"], (Json{{"1", "10GiB"}, {"cpu", "64GiB"}}));  // GPU 3 is cuda:1 among 2,3
  EXPECT_EQ(j["load"]["torch_dtype"], "bfloat16");
  EXPECT_EQ(j["measured"], (Json::array({"hi", "from the dataset", "hi"})));
  EXPECT_EQ(j["warmup"], Json::array());
  EXPECT_EQ(j["generate"]["ignore_eos"], true);
  // Bad arguments exit 2 (argparse's and ours); without transformers, a real run says so and exits 2.
  EXPECT_NE(run("--model m --device-ids 2 --max-memory 3=1GiB --prompt x --dry-run"), 0);
  EXPECT_NE(run("--model m --dry-run"), 0);  // no prompts
  if (std::system((python + " -c 'import transformers' >/dev/null 2>&1").c_str()) != 0) {
    EXPECT_EQ(WEXITSTATUS(run("--model m --prompt x")), 2);
  }
  std::remove(out.c_str());
  std::remove(dataset.c_str());
}

}  // namespace
}  // namespace plexus
