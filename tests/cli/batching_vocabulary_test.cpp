// One vocabulary for batching (docs/cli.md "Batching: one vocabulary"): every command offers the
// same names — --max-sequences, --micro-batch, --global-batch, --max-tokens, and in a benchmark
// scenario.max_sequences, scenario.max_tokens, backend.micro_batch — and still takes the old
// spellings, silently, with the same result.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "cli_run.h"
#include "core/json.h"
#include "core/mmap_file.h"

namespace plexus::testing {
namespace {

class BatchingVocabulary : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = shell_quote(tiny_model(dir_));
    std::ofstream data(dir_ / "train.jsonl");
    for (int i = 0; i < 8; ++i) data << "{\"ids\": [" << 1 + i << ", 5, 9, 13, " << 20 + i << ", 7, 3, 11]}\n";
    std::ofstream(dir_ / "in.jsonl") << "{\"id\": 1, \"ids\": [1, 2]}\n{\"id\": 2, \"ids\": [3, 4, 5]}\n{\"id\": 3, \"ids\": [6]}\n";
  }
  // A plan's JSON without its prediction, which rests on a brief measurement of the host made
  // anew by every run without a calibration file; any other output as it is.
  static std::string without_measurements(const std::string& out) {
    if (out.empty() || out[0] != '{') return out;
    Json j = Json::parse(out);
    j.erase("predicted");
    return j.dump(2);
  }
  // The same command under two spellings: the same exit 0, stdout and stderr (timings aside,
  // `compare_out` false), and nothing said about the spelling.
  void expect_same(const std::string& now, const std::string& old, bool compare_out = true) {
    const ProcessResult a = run_no_gpu(now), b = run_no_gpu(old);
    ASSERT_EQ(a.exit_code, 0) << now << "\n" << a.err;
    ASSERT_EQ(b.exit_code, 0) << old << "\n" << b.err;
    if (compare_out) {
      EXPECT_EQ(without_measurements(a.out), without_measurements(b.out)) << now << "\n" << old;
      EXPECT_EQ(a.err, b.err) << now << "\n" << old;
    }
    for (const char* word : {"deprecated", "old spelling", "warning", "renamed"}) EXPECT_EQ(b.err.find(word), std::string::npos) << old << "\n" << b.err;
  }
  TempDir dir_{"batching_vocabulary"};
  std::string model_;
};

TEST_F(BatchingVocabulary, HelpOffersTheNewNamesOnly) {
  for (const char* c : {"generate", "perplexity", "plan", "batch", "serve", "deploy"}) {
    const std::string help = run_no_gpu(std::string(c) + " --help").out;
    EXPECT_NE(help.find("  --max-sequences N"), std::string::npos) << c;
    EXPECT_EQ(help.find("  --batch "), std::string::npos) << c << "\n" << help;
    EXPECT_EQ(help.find("--batch-size"), std::string::npos) << c << "\n" << help;
  }
  for (const char* c : {"generate", "perplexity", "batch", "serve", "train", "estimate"}) {
    const std::string help = run_no_gpu(std::string(c) + " --help").out;
    EXPECT_NE(help.find("  --micro-batch M"), std::string::npos) << c;
    EXPECT_EQ(help.find("--micro-batches"), std::string::npos) << c << "\n" << help;
  }
  for (const char* c : {"train", "estimate"}) {
    const std::string help = run_no_gpu(std::string(c) + " --help").out;
    EXPECT_NE(help.find("  --global-batch G"), std::string::npos) << c;
    EXPECT_EQ(help.find("--batch-size"), std::string::npos) << c << "\n" << help;
  }
}

TEST_F(BatchingVocabulary, SequencesInFlight) {
  const std::string plan = "plan " + model_ + " --max-memory 0=1GiB,cpu=4GiB --json ";
  expect_same(plan + "--max-sequences 4", plan + "--batch 4");
  const ProcessResult g = run_no_gpu("generate " + model_ + " --ids 1,2 --max-tokens 2 --max-sequences 3 --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(Json::parse(g.out)["sequences"].size(), 3u);
  expect_same("generate " + model_ + " --ids 1,2 --max-tokens 2 --max-sequences 3", "generate " + model_ + " --ids 1,2 --max-tokens 2 --batch 3",
              false);
  const std::string batch = "batch " + model_ + " --input " + shell_quote(dir_ / "in.jsonl") + " --max-tokens 2 --output ";
  int n = 0;
  for (const char* spelling : {"--max-sequences 2", "--batch-size 2", "--batch 2"}) {
    const ProcessResult r = run_no_gpu(batch + shell_quote(dir_ / ("out" + std::to_string(n++) + ".jsonl")) + " " + spelling);
    EXPECT_EQ(r.exit_code, 0) << spelling << "\n" << r.err;
  }
  // serve reads --batch as --max-sequences (it used to refuse it): the error here is the model's.
  const ProcessResult s = run_no_gpu("serve " + shell_quote(dir_ / "absent") + " --batch 2 --port 0");
  expect_usage_error(s, "serve --batch", {"not found"});
  EXPECT_EQ(s.err.find("--batch"), std::string::npos) << s.err;
}

TEST_F(BatchingVocabulary, MicroBatchesOnSeveralDevices) {
  const std::string run = "generate " + model_ + " --ids 1,2 --max-tokens 2 --max-sequences 4 --virtual-devices 2 --json ";
  const ProcessResult by_size = run_no_gpu(run + "--micro-batch 1");
  ASSERT_EQ(by_size.exit_code, 0) << by_size.err;
  EXPECT_EQ(Json::parse(by_size.out)["execution"]["micro_batches"], 4);  // 4 sequences, 1 each
  const ProcessResult two = run_no_gpu(run + "--micro-batch 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(Json::parse(two.out)["execution"]["micro_batches"], 2);
  const ProcessResult by_count = run_no_gpu(run + "--micro-batches 2");  // the old spelling: their number
  ASSERT_EQ(by_count.exit_code, 0) << by_count.err;
  EXPECT_EQ(Json::parse(by_count.out)["execution"]["micro_batches"], 2);
  EXPECT_EQ(Json::parse(by_count.out)["sequences"], Json::parse(two.out)["sequences"]);
  expect_usage_error(run_no_gpu(run + "--micro-batch 1 --micro-batches 2"), "both", {"--micro-batch", "--micro-batches", "give --micro-batch"});
}

TEST_F(BatchingVocabulary, TrainingGlobalAndMicroBatches) {
  const std::string train = "train " + model_ + " --data " + shell_quote(dir_ / "train.jsonl") + " --steps 2 --json --out ";
  auto losses = [](const ProcessResult& r) {
    std::vector<double> out;
    const Json report = Json::parse(r.out);  // kept alive: a range-for over a temporary's member dangles
    for (const Json& s : report["steps"]) out.push_back(s["loss"].get<double>());
    return out;
  };
  const ProcessResult now = run_no_gpu(train + shell_quote(dir_ / "a") + " --threads 1 --global-batch 4 --micro-batch 2");
  const ProcessResult old = run_no_gpu(train + shell_quote(dir_ / "b") + " --threads 1 --batch-size 4 --micro-batch 2");
  const ProcessResult micro_only = run_no_gpu(train + shell_quote(dir_ / "c") + " --threads 2 --micro-batch 2 --replicas 2");
  ASSERT_EQ(now.exit_code, 0) << now.err;
  ASSERT_EQ(old.exit_code, 0) << old.err;
  ASSERT_EQ(micro_only.exit_code, 0) << micro_only.err;
  EXPECT_EQ(losses(now), losses(old));
  EXPECT_EQ(Json::parse(micro_only.out)["batch"]["global"], 4);  // replicas × micro-batch
  const std::vector<double> a = losses(micro_only), b = losses(now);  // the same global batch of 4, in micro-batches of 2
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 * std::abs(b[i])) << "step " << i;
  // auto: the largest micro-batch that fits, accumulated to the global batch; the old spelling alike.
  for (const char* flags : {" --micro-batch auto --global-batch 4", " --batch-size auto --global-batch 4"}) {
    const ProcessResult r = run_no_gpu(train + shell_quote(dir_ / (flags[3] == 'm' ? "auto-now" : "auto-old")) + " --threads 1" + flags);
    ASSERT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
    EXPECT_EQ(Json::parse(r.out)["batch"]["global"], 4) << flags;
    EXPECT_NE(r.err.find("--micro-batch auto: micro-batch "), std::string::npos) << r.err;
  }
  expect_usage_error(run_no_gpu(train + shell_quote(dir_ / "d") + " --global-batch 4 --batch-size 4"), "both",
                     {"--global-batch and --batch-size"});
  expect_usage_error(run_no_gpu(train + shell_quote(dir_ / "e")), "none", {"give --global-batch G"});
  expect_usage_error(run_no_gpu(train + shell_quote(dir_ / "f") + " --global-batch 3 --replicas 2"), "odd",
                     {"--global-batch 3 is not divisible by the 2 replicas"});
  expect_same("estimate " + model_ + " --training --global-batch 8 --micro-batch 2 --json",
              "estimate " + model_ + " --training --batch-size 8 --micro-batch 2 --json");
}

TEST_F(BatchingVocabulary, BenchScenarioKeys) {
  const std::string out = dir_ / "results";
  auto config = [&](const std::string& name, const std::string& scenario) {
    const std::string path = dir_ / (name + ".yaml");
    std::ofstream(path) << "name: " << name << "\nmodel: " << dir_.path() << "\nbackend: {virtual_devices: 2}\n"
                        << "scenario:\n  prompts_ids: [[1, 2], [3]]\n  warmup_samples: 0\n" << scenario
                        << "output: {dir: " << out << ", formats: [json]}\n";
    return shell_quote(path);
  };
  const ProcessResult now = run_no_gpu("bench --quiet " + config("now", "  max_sequences: 2\n  max_tokens: 3\n  num_samples: 2\n"));
  ASSERT_EQ(now.exit_code, 0) << now.err;
  const Json j = Json::parse(read_text_file_or_empty(out + "/now.json"));
  EXPECT_EQ(j["config"]["scenario"]["batch_size"], 2);  // result files keep their keys
  EXPECT_EQ(j["config"]["scenario"]["max_new_tokens"], 3);
  EXPECT_EQ(j["throughput"]["output_tokens"], 6);
  // Both names of one key: exit 2 at the old one's line.
  const std::string both = config("both", "  max_sequences: 2\n  batch_size: 4\n");
  expect_usage_error(run_no_gpu("bench --quiet " + both), "both", {"both.yaml:8: scenario.batch_size: is the old name of scenario.max_sequences"});
  // --set under the new name replaces the file's old one.
  const std::string old = config("old", "  batch_size: 1\n  max_new_tokens: 2\n");
  const ProcessResult set = run_no_gpu("bench --quiet " + old + " --set scenario.max_sequences=2 --set scenario.max_tokens=1");
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const Json s = Json::parse(read_text_file_or_empty(out + "/old.json"));
  EXPECT_EQ(s["config"]["scenario"]["batch_size"], 2);
  EXPECT_EQ(s["config"]["scenario"]["max_new_tokens"], 1);
}

}  // namespace
}  // namespace plexus::testing
