// `plexus chat-template` as a user runs it: the golden conversations of both models rendered
// by the real binary match the goldens line for line; bad input exits 2 naming the file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/json.h"
#include "test_util.h"

namespace plexus::testing {
namespace {

using OJson = nlohmann::ordered_json;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

void check_cli_golden(const std::string& model) {
  TempDir dir("chat_template_cli_" + model);
  const std::string golden = std::string(PLEXUS_GOLDEN_DIR) + "/chat_templates/" + model + "/cases.jsonl";
  std::ifstream in(golden);
  std::vector<OJson> cases;
  std::string input, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    cases.push_back(OJson::parse(line));
    OJson req = OJson::object();
    for (const char* key : {"messages", "tools", "add_generation_prompt", "kwargs"})
      if (cases.back().contains(key)) req[key] = cases.back()[key];
    input += req.dump() + "\n";
  }
  write_text(dir / "in.jsonl", input);
  const ProcessResult r = run_plexus("chat-template " + shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/" + model) +
                                     " --jsonl " + shell_quote(dir / "in.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream out(r.out);
  std::size_t i = 0;
  for (; std::getline(out, line); ++i) {
    ASSERT_LT(i, cases.size());
    const OJson got = OJson::parse(line);
    const OJson& want = cases[i];
    if (want.contains("rendered")) {
      EXPECT_EQ(got.value("rendered", std::string("<missing>")), want["rendered"].get<std::string>()) << "case " << i;
    } else {
      ASSERT_TRUE(got.contains("error")) << "case " << i << ": " << line;
      if (want["error_kind"] == "raise_exception") {
        EXPECT_EQ(got["error"], want["error"]) << "case " << i;
      }
    }
  }
  EXPECT_EQ(i, cases.size());
}

TEST(ChatTemplateCliTest, Llama3GoldenFile) { check_cli_golden("llama3"); }
TEST(ChatTemplateCliTest, Qwen3GoldenFile) { check_cli_golden("qwen3"); }

TEST(ChatTemplateCliTest, RaisedAndFailedLinesAreNotFatal) {
  TempDir dir("chat_template_cli_errors");
  write_text(dir / "tokenizer_config.json",
             R"({"chat_template": "{% if messages | length == 0 %}{{ raise_exception('No messages: \"give one\"') }}{% endif %}{{ messages[0].content + '!' }}"})");
  write_text(dir / "in.jsonl",
             "{\"messages\": []}\n\n{\"messages\": [{\"role\": \"user\", \"content\": null}]}\n"
             "{\"messages\": [{\"role\": \"user\", \"content\": \"naïve\"}], \"add_generation_prompt\": true}\n");
  const ProcessResult r = run_plexus("chat-template " + shell_quote(dir.path()) + " --jsonl " + shell_quote(dir / "in.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream out(r.out);
  std::string l1, l2, l3;
  std::getline(out, l1);
  std::getline(out, l2);
  std::getline(out, l3);
  EXPECT_EQ(OJson::parse(l1), OJson({{"error", "No messages: \"give one\""}}));
  EXPECT_NE(OJson::parse(l2).value("error", std::string()).find("NoneType"), std::string::npos) << l2;
  EXPECT_EQ(OJson::parse(l3), OJson({{"rendered", "naïve!"}}));
}

TEST(ChatTemplateCliTest, BadInputExitsTwo) {
  TempDir dir("chat_template_cli_bad");
  const std::string model = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3";
  ProcessResult r = run_plexus("chat-template " + shell_quote(model) + " --jsonl " + shell_quote(dir / "missing.jsonl"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.jsonl"), std::string::npos) << r.err;

  write_text(dir / "bad.jsonl", "{\"messages\": []}\n{not json\n");
  r = run_plexus("chat-template " + shell_quote(model) + " --jsonl " + shell_quote(dir / "bad.jsonl"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.jsonl:2"), std::string::npos) << r.err;

  write_text(dir / "nomsg.jsonl", "{\"prompt\": \"x\"}\n");
  r = run_plexus("chat-template " + shell_quote(model) + " --jsonl " + shell_quote(dir / "nomsg.jsonl"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nomsg.jsonl:1"), std::string::npos) << r.err;

  write_text(dir / "tokenizer_config.json", "{\"eos_token\": \"x\"}");
  r = run_plexus("chat-template " + shell_quote(dir.path()) + " --jsonl " + shell_quote(dir / "nomsg.jsonl"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no chat template"), std::string::npos) << r.err;

  r = run_plexus("chat-template --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--jsonl"), std::string::npos);
}

}  // namespace
}  // namespace plexus::testing
