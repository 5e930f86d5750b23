// `plexus tokenize` end to end: the golden cases through --jsonl, --text, --special, and exit
// code 2 with a message for bad usage and bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/gguf_file.h"
#include "core/gguf_writer.h"
#include "test_util.h"
#include "tokenizer/gguf_vocab_export.h"
#include "tokenizer_test_util.h"

namespace plexus {
namespace {

struct CliRun {
  int code;
  std::string out;
};

// Runs `plexus tokenize ARGS` as a process; stdout, then stderr, in `out`.
CliRun tokenize(const std::string& args) {
  const testing::ProcessResult r = testing::run_plexus("tokenize " + args);
  return CliRun{r.exit_code, r.out + r.err};
}

std::vector<Json> lines(const std::string& s) {
  std::vector<Json> out;
  std::size_t b = 0;
  for (std::size_t e = s.find('\n'); e != std::string::npos; b = e + 1, e = s.find('\n', b))
    out.push_back(Json::parse(s.substr(b, e - b)));
  return out;
}

TEST(TokenizeCli, GoldenCasesThroughJsonl) {
  for (const std::string name : {"mistral"}) {  // all three: golden_test.cpp; here the CLI format
    const std::string dir = test::golden_dir(name);
    const CliRun r = tokenize(dir + " --jsonl " + dir + "/cases.jsonl");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto got = lines(r.out);
    const auto want = test::read_jsonl(dir + "/cases.jsonl");
    ASSERT_EQ(got.size(), want.size()) << name;
    for (std::size_t i = 0; i < got.size(); ++i) {
      // Exactly these keys, in this order, compact.
      ASSERT_EQ(got[i].size(), 3u);
      EXPECT_EQ(got[i]["ids"], want[i]["ids"]) << name << " line " << i + 1;
      EXPECT_EQ(got[i]["ids_with_special"], want[i]["ids_with_special"]) << name << " line " << i + 1;
      EXPECT_EQ(got[i]["decoded"], want[i]["decoded"]) << name << " line " << i + 1;
    }
    EXPECT_EQ(r.out.rfind("{\"ids\":[", 0), 0u);
  }
}

TEST(TokenizeCli, TextAndSpecial) {
  const std::string dir = test::golden_dir("mistral");
  CliRun r = tokenize(dir + "/tokenizer.json --text 'Hello'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "{\"ids\":[22557],\"ids_with_special\":[1,22557],\"decoded\":\"Hello\"}\n");
  r = tokenize(dir + " --text 'Hello' --special");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "{\"ids\":[22557],\"ids_with_special\":[1,22557],\"decoded\":\"<s> Hello\"}\n");
  r = tokenize(dir + " --text ''");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "{\"ids\":[],\"ids_with_special\":[1],\"decoded\":\"\"}\n");
}

TEST(TokenizeCli, GgufFile) {
  // The golden GGUF's SentencePiece vocabulary (llama-tokenize gives 382 479 114 47 1526 36).
  const std::string gguf = std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/gs-llama-q4_0.gguf";
  CliRun r = tokenize(gguf + " --text 'Hello, world!'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "{\"ids\":[382,479,114,47,1526,36],\"ids_with_special\":[1,382,479,114,47,1526,36],"
                   "\"decoded\":\"Hello, world!\"}\n");
}

// Issue 32 item 17: on a Qwen3 GGUF file (the Qwen3 tokenizer.json as plexus quantize writes it)
// "</s>" is one token, as llama.cpp gives it: its loader makes a token spelled "</s>" a control
// token whatever the file's token_type says (tokenizer/gguf_special_tokens.h). The tokenizer.json
// itself keeps Hugging Face's three pieces.
TEST(TokenizeCli, QwenGgufTakesControlLookingTokensWhole) {
  const std::string gguf = std::filesystem::temp_directory_path() / ("plexus_tok_qwen3_" + std::to_string(::getpid()) + ".gguf");
  GgufWriter w;
  w.add("general.architecture", gguf_string("qwen3"));
  for (auto& [k, v] : gguf_tokenizer_metadata(test::golden_dir("qwen3"))) w.add(k, std::move(v));
  w.write(gguf);
  const GgufFile file(gguf);
  ASSERT_EQ(file.find("tokenizer.ggml.tokens")->arr[128247].s, "</s>");
  EXPECT_EQ(file.find("tokenizer.ggml.token_type")->arr[128247].i, 1);  // NORMAL in the file
  const auto ids = [](const CliRun& r) { return lines(r.out).at(0)["ids"].get<std::vector<std::int32_t>>(); };
  const CliRun a = tokenize(test::golden_dir("qwen3") + " --text a"), b = tokenize(test::golden_dir("qwen3") + " --text b");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  std::vector<std::int32_t> want = ids(a);
  want.push_back(128247);
  for (std::int32_t id : ids(b)) want.push_back(id);
  const CliRun r = tokenize(gguf + " --text 'a</s>b'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(ids(r), want) << r.out;
  EXPECT_EQ(lines(r.out).at(0)["decoded"], "a</s>b");
  const CliRun hf = tokenize(test::golden_dir("qwen3") + " --text '</s>'");
  ASSERT_EQ(hf.code, 0) << hf.out;
  EXPECT_EQ(ids(hf).size(), 3u) << hf.out;  // Hugging Face: "</", "s", ">"
  std::filesystem::remove(gguf);
}

TEST(TokenizeCli, BadUsageAndInputExitTwo) {
  const std::string dir = test::golden_dir("mistral");
  CliRun r = tokenize(dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("exactly one of --text"), std::string::npos) << r.out;
  EXPECT_EQ(tokenize(dir + " --text a --jsonl x").code, 2);
  r = tokenize("/nonexistent/model --text a");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("'/nonexistent/model' not found: no such directory"), std::string::npos) << r.out;
  // Issue 32 item 17: a file that is neither GGUF nor JSON (full of '[' bytes) says so, not
  // "JSON nested deeper than 256 levels".
  const std::string binary = std::filesystem::temp_directory_path() / ("plexus_tok_bin_" + std::to_string(::getpid()) + ".gguf");
  std::ofstream(binary, std::ios::binary) << std::string("\x7f" "ELF\x02\x01") + std::string(5000, '[') + std::string(100, '\0');
  r = tokenize(binary + " --text a");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(binary + " is neither a GGUF file nor a tokenizer.json (a JSON object): it starts with the bytes 7f 45 4c 46"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nested deeper"), std::string::npos) << r.out;
  std::filesystem::remove(binary);
  r = tokenize(dir + " --text \"$(printf '\\377')\"");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("not valid UTF-8"), std::string::npos) << r.out;

  const std::string bad = std::filesystem::temp_directory_path() / ("plexus_tok_cli_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(bad) << "{\"text\": \"ok\"}\n\n{\"txt\": 1}\n";
  r = tokenize(dir + " --jsonl " + bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(bad + ":3: each line must be a JSON object with a string field \"text\""), std::string::npos) << r.out;
  std::ofstream(bad) << "{\"text\": \"a\xff\"}\n";
  r = tokenize(dir + " --jsonl " + bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(bad + ":1: invalid JSON"), std::string::npos) << r.out;
  std::filesystem::remove(bad);
  EXPECT_EQ(tokenize(dir + " --jsonl /nonexistent/cases.jsonl").code, 2);
}

}  // namespace
}  // namespace plexus
