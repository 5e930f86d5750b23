// `plexus chat-template` as a user runs it: the golden conversations of both models rendered
// by the real binary match the goldens line for line; bad input exits 2 naming the file;
// hostile templates (issue 32) get an error line quickly, in bounded memory.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/json.h"
#include "core/mmap_file.h"
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

struct MeasuredRun {
  int exit_code = -1;
  std::string out, err;
  long peak_rss_mb = 0;
};

// `plexus ARGS` killed after 120 s, with its peak resident memory (wait4's ru_maxrss covers
// `timeout` and the plexus it waited for).
MeasuredRun run_measured(const std::string& args) {
  TempDir tmp("chat_template_measured");
  const std::string command = "exec timeout -s KILL 120 env CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) + " " +
                              args + " >" + shell_quote(tmp / "out") + " 2>" + shell_quote(tmp / "err") + " </dev/null";
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  MeasuredRun r;
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text_file_or_empty(tmp / "out");
  r.err = read_text_file_or_empty(tmp / "err");
  r.peak_rss_mb = usage.ru_maxrss / 1024;
  return r;
}

// Renders `source` as a model's chat template for one empty conversation: the output line.
OJson render_hostile(const TempDir& dir, const std::string& source, long* peak_rss_mb) {
  write_text(dir / "chat_template.jinja", source);
  write_text(dir / "in.jsonl", "{\"messages\": []}\n");
  const MeasuredRun r = run_measured("chat-template " + shell_quote(dir.path()) + " --jsonl " + shell_quote(dir / "in.jsonl"));
  EXPECT_EQ(r.exit_code, 0) << source << "\n" << r.err;
  *peak_rss_mb = r.peak_rss_mb;
  return r.exit_code == 0 ? OJson::parse(r.out) : OJson::object();
}

TEST(ChatTemplateCliTest, HostileTemplatesAnswerQuicklyInBoundedMemory) {
  TempDir dir("chat_template_cli_hostile");
  long base_mb = 0, peak_mb = 0;
  EXPECT_EQ(render_hostile(dir, "{{ 'ok' }}", &base_mb), OJson({{"rendered", "ok"}}));
  // Issue 32's templates, exactly: each ran past 60 s or allocated gigabytes. Now an error
  // naming the limit (or jinja2's result), its memory within the work budget (512 MiB) and
  // ASan's slack of the process that rendered 'ok'.
  const std::string big = "{% set s = 'a' * 60000000 %}{% set t = 'a' * 59999999 ~ 'b' %}";
  const std::pair<std::string, std::string> cases[] = {
      {big + "{{ t in [s] * 1000000 }}", "touches more than 536870912 bytes"},
      {big + "{{ ([s, t] * 500000) | sort | length }}", "touches more than 536870912 bytes"},
      {big + "{{ ([s, t] * 500000) | unique | list | length }}", "touches more than 536870912 bytes"},
      {big + "{{ ([s, t] * 500000) | max | length }}", "touches more than 536870912 bytes"},
      {big + "{% set u = 'a' * 60000000 %}{{ [s] * 1000000 == [u] * 1000000 }}", "touches more than 536870912 bytes"},
      {big + "{{ {'a': s, 'b': t, 'c': s, 'd': t, 'e': s, 'f': t, 'g': s, 'h': t} | dictsort(by='value') }}",
       "touches more than 536870912 bytes"},
      {big + "{{ ([{'k': s}, {'k': t}] * 500000) | sort(attribute='k') | length }}", "touches more than 536870912 bytes"},
      {"{{ range(10) | batch(10**8, 'x') | list | length }}", "a list grows past 1000000 items"},
      {"{{ ('a' * 60000000) | replace('a', 'a' * 1000) | length }}", "more than"},
      {"{{ '%999999999d' % 1 }}", "makes a string past the 67108864-byte output limit"},
      {"{{ (1e308*10) | int }}", "cannot convert float infinity to integer"},
  };
  for (const auto& [source, error] : cases) {
    const OJson got = render_hostile(dir, source, &peak_mb);
    EXPECT_NE(got.value("error", std::string()).find(error), std::string::npos) << source << ": " << got.dump();
    EXPECT_LT(peak_mb - base_mb, 1536) << source;
  }
  const std::pair<std::string, std::string> results[] = {
      {"{{ range(0, 9223372036854775807, 4611686018427387904) | list }}", "[0, 4611686018427387904]"},
      {"{{ range(-9223372036854775807 - 1, 9223372036854775807, 4611686018427387904) | length }}", "4"},
      {"{{ 'ff' | int(base=16) }}", "255"},
      // Issue 32's reproducers exactly, with jinja2's integers past 64 bits.
      {"{{ range(0, 2**63-1, 2**62)|list }}", "[0, 4611686018427387904]"},
      {"{{ range(-2**63, 2**63-1, 2**62)|length }}", "4"},
      {"{{ 2**63-1 }}|{{ -2**63 }}|{{ 2**64 // 2 }}|{{ 2**100 }}|{{ 9007199254740993 == 9007199254740992.0 }}|{{ 2**64 == 2.0**64 }}",
       "9223372036854775807|-9223372036854775808|9223372036854775808|1267650600228229401496703205376|False|True"},
      {"{{ '99999999999999999999'|int + 1 }}|{{ {'n': 2**64}|tojson }}|{{ 2**100 / 2**99 }}",
       "100000000000000000000|{\"n\": 18446744073709551616}|2.0"},
  };
  for (const auto& [source, rendered] : results) {
    EXPECT_EQ(render_hostile(dir, source, &peak_mb), OJson({{"rendered", rendered}})) << source;
    EXPECT_LT(peak_mb - base_mb, 256) << source;
  }
}

TEST(ChatTemplateCliTest, ReviewedTemplatesRenderOrFailNeverCrash) {
  // Found in review of serve/jinja: templates (raw bytes, as a GGUF or chat_template.jinja gives
  // them) that crashed the process or gave a result other than Python's.
  TempDir dir("chat_template_cli_reviewed");
  long peak_mb = 0;
  std::string set;  // 20 four-byte sequences past U+10FFFF (lead byte F7): once indexes past a bitmap
  for (int k = 0; k < 20; ++k) set += std::string("\xf7\xbf\xbf") + static_cast<char>(0x80 + k);
  const std::string ns = "{% set ns = namespace() %}";
  const std::pair<std::string, std::string> results[] = {
      {"{{ ('\xf7\xbf\xbf\x80' ~ 'a' ~ '\xf7\xbf\xbf\x93').strip('" + set + "') }}", "a"},
      {"{{ ('\x80' ~ 'a').strip('\xf4\x90\x82\x80' ~ '\xce\xb1\xce\xb2\xce\xb3\xce\xb4\xce\xb5\xce\xb6\xce\xb7\xce\xb8\xce\xb9"
       "\xce\xba\xce\xbb\xce\xbc\xce\xbd\xce\xbe\xce\xbf\xcf\x80\xcf\x81') | length }}",
       "2"},
      {ns + "{% for x in [ns, 1] %}{% if loop.first %}{% set ns.l = loop %}{% endif %}{% endfor %}{{ ns.l.index }}"
            "{{ (ns | string)[:15] }}",
       "1<Namespace {'l'"},
      {"{{ (-2**63)**2 }}", "85070591730234615865843651857942052864"},
  };
  for (const auto& [source, rendered] : results)
    EXPECT_EQ(render_hostile(dir, source, &peak_mb), OJson({{"rendered", rendered}})) << source;
  const OJson got = render_hostile(dir, ns + "{% for x in [1, ns] %}{% set ns.l = loop %}{% endfor %}{{ ns }}", &peak_mb);
  EXPECT_NE(got.value("error", std::string()).find("a namespace cannot hold itself"), std::string::npos) << got.dump();
}

}  // namespace
}  // namespace plexus::testing
