// The real plexus binary on bad input: a clear message naming the file or field, exit 2, no crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;
using testing::TempDir;

void expect_bad_input(const std::string& args, const std::string& must_mention) {
  const testing::ProcessResult r = run_plexus(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(must_mention), std::string::npos) << args << "\nstderr: " << r.err;
}

std::string tiny_model(const TempDir& dir) {
  MakeModelOptions o;
  o.vocab_size = 300;
  write_random_model(dir.path(), o);
  return dir.path();
}

TEST(CliErrors, UsageErrors) {
  expect_bad_input("frobnicate", "unknown command");
  expect_bad_input("generate", "MODEL");
  expect_bad_input("generate /nonexistent --ids 1 --bogus", "--bogus");
  expect_bad_input("make-model /tmp/x --preset huge", "huge");
  expect_bad_input("make-model /tmp/x --arch gpt2", "gpt2");
  EXPECT_EQ(run_plexus("generate --help").exit_code, 0);
  EXPECT_NE(run_plexus("generate --help").out.find("--max-tokens"), std::string::npos);
  EXPECT_EQ(run_plexus("--help").exit_code, 0);
}

TEST(CliErrors, MissingAndMalformedModels) {
  expect_bad_input("generate /nonexistent/model --ids 1", "/nonexistent/model");
  TempDir dir("bad");
  const std::string m = tiny_model(dir);
  const std::string q = shell_quote(m);
  expect_bad_input("generate " + q + " --ids 1,2,300", "300");      // id outside the vocabulary
  expect_bad_input("perplexity " + q + " --ids 1,-2", "-2");
  expect_bad_input("generate " + q + " --prompt hi", "tokenizer");  // no tokenizer.json
  expect_bad_input("generate " + q + " --ids 1 --max-tokens 0", "--max-tokens");
  expect_bad_input("generate " + q + " --ids 1 --temperature -0.5", "--temperature");

  testing::patch_config(m, Json{{"architectures", {"BertModel"}}});
  expect_bad_input("generate " + q + " --ids 1", "BertModel");
  testing::patch_config(m, Json{{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 128}});
  expect_bad_input("generate " + q + " --ids 1", "shape");
  testing::patch_config(m, Json{{"hidden_size", 64}});
  {
    std::ofstream(m + "/config.json", std::ios::app) << "garbage";
  }
  expect_bad_input("generate " + q + " --ids 1", "config.json");
}

TEST(CliErrors, CorruptSafetensors) {
  TempDir dir("corrupt");
  const std::string m = tiny_model(dir);
  const std::string path = m + "/model.safetensors";
  // Truncate: the last tensor's range now runs past the end.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  expect_bad_input("generate " + shell_quote(m) + " --ids 1", "model.safetensors");
  std::filesystem::resize_file(path, 4);
  expect_bad_input("generate " + shell_quote(m) + " --ids 1", "truncated");
}

TEST(CliErrors, MakeModelGenerateRoundTrip) {
  TempDir dir("roundtrip");
  const std::string out = dir / "nested/m";  // parent directories are created too
  const testing::ProcessResult made = run_plexus("make-model " + shell_quote(out) + " --preset tiny --arch qwen3 --dtype f16 --seed 5 --vocab 400");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // Refuses to overwrite without --force.
  expect_bad_input("make-model " + shell_quote(out), "--force");
  const testing::ProcessResult g = run_plexus("generate " + shell_quote(out) + " --ids 3,4,5 --max-tokens 5 --json --ignore-eos");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const Json j = Json::parse(g.out);
  EXPECT_EQ(j["ids"].size(), 5u);
  for (const char* k : {"prefill_tokens_per_s", "decode_tokens_per_s", "ttft_ms"}) EXPECT_TRUE(j.contains(k)) << k;
  // The run was monitored: the summary of the session rides along.
  ASSERT_TRUE(j.contains("monitor"));
  EXPECT_TRUE(j["monitor"]["aggregate"].contains("total_avg_utilization"));
  EXPECT_GT(j["monitor"]["duration_s"].get<double>(), 0.0);
  const testing::ProcessResult p = run_plexus("perplexity " + shell_quote(out) + " --ids 3,4,5,6 --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const Json pj = Json::parse(p.out);
  EXPECT_EQ(pj["nll"].size(), 3u);
  EXPECT_EQ(pj["n_tokens"], 4);
  EXPECT_GT(pj["ppl"].get<double>(), 1.0);
}

}  // namespace
}  // namespace plexus
