// `plexus train` as a process: bad input exits 2 naming the file:line or path with nothing
// written; the output loads in generate and perplexity; kill -9 (a test hook and a real kill at
// random moments) then --resume ends bit-identical to an uninterrupted run; non-finite steps are
// skipped and --max-skipped ends the run with exit 1 and a checkpoint.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>

#include "train_cli_util.h"

namespace plexus {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using testing::run_plexus;
using testing::shell_quote;
using train_test::file_bytes;
using train_test::train_args;

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override { train_test::make_inputs(dir_); }
  testing::TempDir dir_{"train_cli"};
};

// Exit 2 with `needle` in stderr, and `out` not created.
void expect_bad(const testing::ProcessResult& r, const std::string& needle, const std::string& out) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
  EXPECT_FALSE(fs::exists(out)) << out;
}

TEST_F(TrainCli, BadInputExitsTwoNamingTheLineOrPathWithNothingWritten) {
  const std::string out = dir_ / "out";
  const std::string data = dir_ / "data.jsonl";
  const auto with_line = [&](const std::string& line) {
    std::ofstream(dir_ / "bad.jsonl") << file_bytes(data) << line << "\n";
    return run_plexus(train_args(dir_, out, 2, 4, "", dir_ / "bad.jsonl"));
  };
  expect_bad(with_line("not json"), dir_ / "bad.jsonl" + ":13: invalid JSON", out);
  expect_bad(with_line("{\"text\": \"hi\"}"), dir_ / "bad.jsonl" + ":13: no \"ids\"", out);
  expect_bad(with_line("{\"ids\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 300]}"),
             dir_ / "bad.jsonl" + ":13: token id 300", out);
  // Issue 32 item 17: 2^64 - 1 is named as written, not as "token id -1".
  expect_bad(with_line("{\"ids\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18446744073709551615]}"),
             dir_ / "bad.jsonl" + ":13: token id 18446744073709551615 (\"ids\"[16]) is outside", out);
  expect_bad(with_line("{\"ids\": [1, 2, 3]}"), dir_ / "bad.jsonl" + ":13: a sequence of 3 tokens, but line 1 has 17", out);
  // With --seq-len the longer lines are cut, a shorter one is named.
  const testing::ProcessResult cut = run_plexus(train_args(dir_, out, 2, 4, "--seq-len 8", dir_ / "bad.jsonl"));
  expect_bad(cut, dir_ / "bad.jsonl" + ":13: a sequence of 3 tokens is shorter than --seq-len 8", out);
  expect_bad(run_plexus(train_args(dir_, out, 2, 3, "--replicas 2")), "--global-batch 3 is not divisible by the 2 replicas", out);
  expect_bad(run_plexus(train_args(dir_, out, 2, 4, "--virtual-devices 2 --micro-batch 3")), "not divisible by --micro-batch 3", out);
  expect_bad(run_plexus(train_args(dir_, out, 2, 4, "--virtual-gpus 2")), "the GPU backward is not built yet", out);
  expect_bad(run_plexus(train_args(dir_, out, 2, 4, "--max-memory 0=1GiB")), "the GPU backward is not built yet", out);
  expect_bad(run_plexus(train_args(dir_, out, 2, 4, "--devices 0")), "--devices 0: training runs on CPU devices", out);
  expect_bad(run_plexus(train_args(dir_, out, 2, 4, "--virtual-devices 2 --max-memory 0=1GiB,2=1GiB")),
             "budgets device 2 but --virtual-devices 2 makes devices 0..1", out);
  expect_bad(run_plexus(train_args(dir_, out, 2, 4, "--replicas 3 --virtual-devices 2")), "give one of them", out);
  expect_bad(run_plexus(train_args(dir_, out, 2, 4, "--resume")), "--resume: no checkpoint in " + out + "/checkpoints", out);

  // An --out holding another model.
  const std::string other = dir_ / "other";
  ASSERT_EQ(run_plexus("make-model " + shell_quote(other) + " --preset tiny --vocab 301 --dtype f32").exit_code, 0);
  const std::string before = file_bytes(other + "/model.safetensors");
  const testing::ProcessResult r = run_plexus(train_args(dir_, other, 2, 4));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(other + "/config.json: vocab_size 301 instead of 300"), std::string::npos) << r.err;
  EXPECT_EQ(file_bytes(other + "/model.safetensors"), before);
  EXPECT_FALSE(fs::exists(other + "/checkpoints"));
}

// Issue 32 item 15: AdamW's hyper-parameters outside torch.optim.AdamW's ranges (and eps 0, or
// one that is 0 in f32) exit 2 naming the flag and its value, before anything is written; they
// used to run and write a model whose every weight was NaN.
TEST_F(TrainCli, AdamWHyperParametersOutsideTheirRangesExitTwo) {
  const std::string out = dir_ / "out";
  for (const auto& [flags, mention] : std::vector<std::pair<std::string, std::string>>{
           {"--beta1 1", "--beta1 must be at least 0 and less than 1"},
           {"--beta2 1", "--beta2 must be at least 0 and less than 1"},
           {"--beta1 1.5", "got 1.5"},
           {"--beta2 -0.1", "--beta2"},
           {"--beta1 nan", "--beta1"},
           {"--eps 0", "--eps must be more than 0"},
           {"--eps -1e-8", "--eps"},
           {"--eps 1e-50", "rounds to 0 in f32"},
           {"--lr -0.001", "--lr must be between 0 and 1000"},
           {"--lr inf", "--lr"},
           {"--weight-decay -0.1", "--weight-decay"},
           {"--max-grad-norm -1", "--max-grad-norm"}}) {
    expect_bad(run_plexus(train_args(dir_, out, 2, 4, flags)), mention, out);
  }
  // The edges that are in range run.
  const testing::ProcessResult ok = run_plexus(train_args(dir_, out, 1, 4, "--beta1 0 --beta2 0.9999999 --eps 1e-45 --lr 0"));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(TrainCli, OutputLoadsInGenerateAndPerplexityAndJsonHasTheKeys) {
  const std::string out = dir_ / "out";
  const testing::ProcessResult r = run_plexus(train_args(dir_, out, 3, 4, "--json --checkpoint-every 1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["steps"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const Json& s = j["steps"][i];
    EXPECT_EQ(s["step"], Json(i + 1));
    for (const char* key : {"loss", "grad_norm", "lr", "tokens_per_s"}) EXPECT_TRUE(s[key].is_number()) << key;
    EXPECT_NEAR(s["lr"].get<double>(), 1e-3, 1e-12);
  }
  EXPECT_LT(j["steps"][2]["loss"].get<double>(), j["steps"][0]["loss"].get<double>());  // it learns
  EXPECT_EQ(j["skipped_steps"], Json(0));
  EXPECT_TRUE(j["monitor"].is_object());
  ASSERT_EQ(j["ranks"].size(), 1u);
  EXPECT_TRUE(j["ranks"][0]["compute_s"].is_number());
  // The newest two checkpoints stay.
  EXPECT_FALSE(fs::exists(out + "/checkpoints/step-000001"));
  EXPECT_TRUE(fs::exists(out + "/checkpoints/step-000002/state.json"));
  EXPECT_TRUE(fs::exists(out + "/checkpoints/step-000003/model.safetensors"));
  // A Hugging Face f32 checkpoint with the side files.
  EXPECT_EQ(read_json_file(out + "/config.json")["torch_dtype"], Json("float32"));
  EXPECT_EQ(file_bytes(out + "/generation_config.json"), file_bytes(dir_ / "model/generation_config.json"));
  EXPECT_TRUE(fs::exists(out + "/tokenizer_config.json"));
  EXPECT_EQ(file_bytes(out + "/model.safetensors"), file_bytes(out + "/checkpoints/step-000003/model.safetensors"));
  const testing::ProcessResult gen = run_plexus("generate " + shell_quote(out) + " --ids 1,2,3 --max-tokens 4");
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
  const testing::ProcessResult ppl = run_plexus("perplexity " + shell_quote(out) + " --ids 5,6,7,8,9 --json");
  ASSERT_EQ(ppl.exit_code, 0) << ppl.err;
  EXPECT_TRUE(std::isfinite(Json::parse(ppl.out)["ppl"].get<double>()));
  // Again without --resume: refused, nothing changed.
  const std::string model = file_bytes(out + "/model.safetensors");
  const testing::ProcessResult again = run_plexus(train_args(dir_, out, 3, 4));
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("pass --resume to continue it, or choose another --out"), std::string::npos) << again.err;
  EXPECT_EQ(file_bytes(out + "/model.safetensors"), model);
  // --resume asking for fewer steps than the checkpoint has done, and --out naming the model.
  const testing::ProcessResult fewer = run_plexus(train_args(dir_, out, 2, 4, "--resume"));
  EXPECT_EQ(fewer.exit_code, 2);
  EXPECT_NE(fewer.err.find("--steps 2 is below the 3 steps " + out + "/checkpoints/step-000003 has done"), std::string::npos) << fewer.err;
  const testing::ProcessResult self = run_plexus(train_args(dir_, dir_ / "model", 2, 4));
  EXPECT_EQ(self.exit_code, 2);
  EXPECT_NE(self.err.find("is the model's own directory"), std::string::npos) << self.err;
  // --resume with other options the bits depend on: refused, naming the checkpoint.
  const testing::ProcessResult lr = run_plexus(train_args(dir_, out, 4, 4, "--resume --lr 2e-3"));
  EXPECT_EQ(lr.exit_code, 2);
  EXPECT_NE(lr.err.find(out + "/checkpoints/step-000003 was written with lr 0.001"), std::string::npos) << lr.err;
}

TEST_F(TrainCli, AnInterruptedRunsCheckpointIsAModelWithItsTokenizer) {
  // Stopped (Ctrl-C) after 2 of 5 steps: --out has no trained model yet, its newest checkpoint is
  // the model there is, and generate --prompt loads it (it needs the tokenizer).
  const std::string model = dir_ / "chat", out = dir_ / "out";
  ASSERT_EQ(run_plexus("make-model " + shell_quote(model) + " --preset tiny --dtype f32 --tokenizer " +
                       shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral")).exit_code, 0);
  const testing::ProcessResult r = run_command(
      "PLEXUS_TRAIN_FAIL=sigint_at_step=2 " + testing::shell_quote(PLEXUS_BINARY) + " train " + shell_quote(model) + " --data " +
      shell_quote(dir_ / "data.jsonl") + " --out " + shell_quote(out) + " --steps 5 --batch-size 2 --threads 1");
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
  const std::string checkpoint = out + "/checkpoints/step-000002";
  EXPECT_TRUE(fs::exists(checkpoint + "/tokenizer.json") &&
              file_bytes(checkpoint + "/tokenizer.json") == file_bytes(model + "/tokenizer.json"));
  const testing::ProcessResult gen = run_plexus("generate " + shell_quote(checkpoint) + " --prompt Hello --max-tokens 2");
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
}

TEST_F(TrainCli, KillHookThenResumeEndsBitIdentical) {
  const std::string full = dir_ / "full";
  ASSERT_EQ(run_plexus(train_args(dir_, full, 6, 4, "--checkpoint-every 2")).exit_code, 0);
  const std::string want = file_bytes(full + "/model.safetensors");
  ASSERT_FALSE(want.empty());
  for (const std::string hook : {"kill_at_step=3", "kill_in_checkpoint=4"}) {
    const std::string out = dir_ / ("killed-" + hook.substr(0, hook.find('=')));
    const testing::ProcessResult killed = run_command("PLEXUS_TRAIN_FAIL=" + hook + " CUDA_VISIBLE_DEVICES= " +
                                                      shell_quote(PLEXUS_BINARY) + " " + train_args(dir_, out, 6, 4, "--checkpoint-every 2"));
    EXPECT_EQ(killed.exit_code, 128 + 9) << hook << ": " << killed.err;
    EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
    const testing::ProcessResult resumed = run_plexus(train_args(dir_, out, 6, 4, "--checkpoint-every 2 --resume"));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.err.find("resuming from " + out + "/checkpoints/step-000002"), std::string::npos) << resumed.err;
    EXPECT_EQ(file_bytes(out + "/model.safetensors"), want) << hook;
    EXPECT_EQ(file_bytes(out + "/checkpoints/step-000006/exp_avg_sq.safetensors"),
              file_bytes(full + "/checkpoints/step-000006/exp_avg_sq.safetensors"));
  }
  // SIGINT (Ctrl-C) after step 3: a checkpoint of step 3, exit 130; --resume ends the same.
  const std::string out = dir_ / "interrupted";
  const testing::ProcessResult stopped = run_command("PLEXUS_TRAIN_FAIL=sigint_at_step=3 CUDA_VISIBLE_DEVICES= " +
                                                     shell_quote(PLEXUS_BINARY) + " " + train_args(dir_, out, 6, 4, "--checkpoint-every 2 --json"));
  EXPECT_EQ(stopped.exit_code, 130) << stopped.err;
  EXPECT_NE(stopped.err.find("interrupted after step 3; " + out + "/checkpoints/step-000003 was written"), std::string::npos) << stopped.err;
  EXPECT_TRUE(Json::parse(stopped.out)["interrupted"].get<bool>());
  EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
  ASSERT_EQ(run_plexus(train_args(dir_, out, 6, 4, "--checkpoint-every 2 --resume")).exit_code, 0);
  EXPECT_EQ(file_bytes(out + "/model.safetensors"), want);
}

// Whether OUT/checkpoints holds a complete checkpoint (a step-* directory; a .tmp-* one is not).
bool has_checkpoint(const std::string& out) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(out + "/checkpoints", ec)) {
    if (e.path().filename().string().rfind("step-", 0) == 0) return true;
  }
  return false;
}

TEST_F(TrainCli, RealKill9AtRandomMomentsThenResumeEndsBitIdentical) {
  constexpr int kSteps = 20;
  const std::string full = dir_ / "full";
  const std::string args = " --checkpoint-every 1";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(run_plexus(train_args(dir_, full, kSteps, 4, args)).exit_code, 0);
  const int run_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
  const std::string want = file_bytes(full + "/model.safetensors");
  const std::string out = dir_ / "killed";
  // kill -9 at a random moment of a run's length (start-up, steps, checkpoint writes, the end),
  // then resume; the last tries run to the end. The delays only decide where the kills land.
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay_ms(1, std::max(2, run_ms * 3 / 4));
  int kills = 0;
  // config.json is written last: its presence means the run ended.
  for (int attempt = 0; attempt < 10 && !fs::exists(out + "/config.json"); ++attempt) {
    const std::string cmd = "CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) + " " +
                            train_args(dir_, out, kSteps, 4, args + (has_checkpoint(out) ? " --resume" : ""));
    if (attempt >= 6) {
      const testing::ProcessResult r = run_command(cmd);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      continue;
    }
    const std::string delay = std::to_string(delay_ms(rng) / 1000.0);
    const testing::ProcessResult r = run_command("(" + cmd + ") & pid=$!; (sleep " + delay +
                                                 "; kill -9 $pid 2>/dev/null) & killer=$!; wait $pid; "
                                                 "code=$?; kill $killer 2>/dev/null; wait $killer; exit $code");
    if (r.exit_code == 128 + 9) {
      ++kills;
    } else {
      EXPECT_EQ(r.exit_code, 0) << r.err;  // not killed: it ran to the end
    }
  }
  std::printf("%d runs killed (a run takes ~%d ms)\n", kills, run_ms);
  ASSERT_TRUE(fs::exists(out + "/config.json")) << "did not finish";
  EXPECT_EQ(file_bytes(out + "/model.safetensors"), want) << kills << " kills";
}

TEST_F(TrainCli, NonFiniteStepIsSkippedAndMaxSkippedEndsWithExitOneAndACheckpoint) {
  const std::string out = dir_ / "nan";
  const testing::ProcessResult r = run_command("PLEXUS_TRAIN_FAIL=nan_steps=2 CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) +
                                               " " + train_args(dir_, out, 4, 4, "--json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["skipped_steps"], Json(1));
  EXPECT_TRUE(j["steps"][1]["skipped"].get<bool>());
  EXPECT_FALSE(j["steps"][2]["skipped"].get<bool>());
  EXPECT_NE(r.err.find("step 2/4 skipped: gradient norm"), std::string::npos) << r.err;

  const std::string stop = dir_ / "stop";
  const testing::ProcessResult s = run_command("PLEXUS_TRAIN_FAIL=nan_steps=2-4 CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) +
                                               " " + train_args(dir_, stop, 6, 4, "--max-skipped 2 --json"));
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_NE(s.err.find("--max-skipped 2: steps 2..3"), std::string::npos) << s.err;
  EXPECT_TRUE(fs::exists(stop + "/checkpoints/step-000003/state.json"));
  EXPECT_FALSE(fs::exists(stop + "/model.safetensors"));
  EXPECT_EQ(Json::parse(s.out)["skipped_steps"], Json(2));
  // The checkpoint is a model every command loads (a new run can start from it).
  const testing::ProcessResult ppl = run_plexus("perplexity " + shell_quote(stop + "/checkpoints/step-000003") + " --ids 5,6,7,8");
  EXPECT_EQ(ppl.exit_code, 0) << ppl.err;
}

}  // namespace
}  // namespace plexus
