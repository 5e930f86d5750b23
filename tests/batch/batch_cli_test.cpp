// `plexus batch` through the real binary: output format, resume after a crash (SIGKILL after K
// results) and after a torn line, bad input lines, requests that fail for good.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "batch_test_util.h"
#include "core/json.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::read_jsonl;
using testing::results_by_id;
using testing::run_plexus;
using testing::shell_quote;

class BatchCli : public testing::BatchRunTest {
 protected:
  BatchCli() : BatchRunTest("batch_cli", 3, 10, "--threads 1 --batch-size 2") {}
};

TEST_F(BatchCli, WritesOneLinePerRequestWithEveryField) {
  const std::string out = dir_ / "out.jsonl";
  const testing::ProcessResult r = run_plexus(batch_args(out, "--json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Json> lines = read_jsonl(out);
  ASSERT_EQ(lines.size(), 10u);
  for (const Json& l : lines) {
    for (const char* k : {"id", "ids", "finish_reason", "prompt_tokens", "completion_tokens", "replica", "latency_ms"}) {
      EXPECT_TRUE(l.contains(k)) << k << " missing in " << l.dump();
    }
    EXPECT_FALSE(l.contains("text"));  // no tokenizer.json
    EXPECT_EQ(l["completion_tokens"].get<std::size_t>(), l["ids"].size());
    EXPECT_EQ(l["replica"], Json(0));
    const std::string reason = l["finish_reason"];
    EXPECT_TRUE(reason == "stop" || reason == "length");
  }
  // Per-request max_tokens: r0 asks for 3 (greedy, stops only at eos id 2).
  const Json r0 = results_by_id(out).at("\"r0\"");
  EXPECT_LE(r0["ids"].size(), 3u);
  const Json summary = Json::parse(r.out);
  EXPECT_EQ(summary["done"], Json(10));
  EXPECT_EQ(summary["failed"], Json(0));
  EXPECT_EQ(summary["resumed"], Json(0));
  EXPECT_EQ(summary["replicas"][0]["done"], Json(10));
  EXPECT_NE(r.err.find("10 done now"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.errors.jsonl") && !read_text_file_or_empty(dir_ / "out.errors.jsonl").empty());
}

TEST_F(BatchCli, ResumeAfterACrashGivesTheUninterruptedOutput) {
  const std::string base = dir_ / "base.jsonl", out = dir_ / "out.jsonl";
  ASSERT_EQ(run_plexus(batch_args(base)).exit_code, 0);
  {
    testing::ScopedEnv kill("PLEXUS_BATCH_FAIL", "kill_after=3");
    const testing::ProcessResult crashed = run_plexus(batch_args(out));
    EXPECT_EQ(crashed.exit_code, 128 + 9) << crashed.err;  // SIGKILL, as kill -9
  }
  EXPECT_EQ(read_jsonl(out).size(), 3u);
  const testing::ProcessResult resumed = run_plexus(batch_args(out, "--json"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Json::parse(resumed.out)["resumed"], Json(3));
  EXPECT_EQ(Json::parse(resumed.out)["done"], Json(7));
  EXPECT_EQ(results_by_id(out), results_by_id(base));
  // Once more: nothing left to do, nothing written.
  const std::string before = read_text_file_or_empty(out);
  const testing::ProcessResult again = run_plexus(batch_args(out, "--json"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Json::parse(again.out)["resumed"], Json(10));
  EXPECT_EQ(read_text_file_or_empty(out), before);
}

TEST_F(BatchCli, ATornLastLineIsCutAndItsRequestRunsAgain) {
  const std::string base = dir_ / "base.jsonl", out = dir_ / "out.jsonl";
  ASSERT_EQ(run_plexus(batch_args(base)).exit_code, 0);
  const std::string text = read_text_file_or_empty(base);
  std::size_t cut = 0;
  for (int i = 0; i < 4; ++i) cut = text.find('\n', cut) + 1;
  std::ofstream(out) << text.substr(0, cut + 15);  // four lines and the start of a fifth
  const testing::ProcessResult r = run_plexus(batch_args(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("torn last line (15 bytes)"), std::string::npos) << r.err;
  EXPECT_EQ(results_by_id(out), results_by_id(base));
}

TEST_F(BatchCli, BadLinesFailBeforeAnyWorkOrAreSkipped) {
  std::ofstream(in(), std::ios::app) << "{\"id\": \"r1\", \"ids\": [1]}\nnot json\n{\"ids\": [1]}\n{\"id\": \"big\", \"ids\": [300]}\n"
                                        "{\"id\": \"t\", \"prompt\": \"hello\"}\n{\"id\": \"m\", \"ids\": [1], \"max_tokens\": -1}\n";
  const std::string out = dir_ / "out.jsonl";
  const testing::ProcessResult fail = run_plexus(batch_args(out));
  EXPECT_EQ(fail.exit_code, 2) << fail.err;
  EXPECT_NE(fail.err.find(in() + ":11: duplicate id \"r1\" (first on line 2)"), std::string::npos) << fail.err;
  EXPECT_NE(fail.err.find("and 5 more bad lines"), std::string::npos) << fail.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.errors.jsonl"));

  const testing::ProcessResult skip = run_plexus(batch_args(out, "--on-bad-line skip --json"));
  ASSERT_EQ(skip.exit_code, 0) << skip.err;
  for (const char* what : {":12: not JSON", ":13: no \"id\"", ":14: token id 300 is outside the vocabulary [0, 300)",
                           ":15: \"prompt\" needs a tokenizer", ":16: 'max_tokens' must be an integer"}) {
    EXPECT_NE(skip.err.find(in() + what), std::string::npos) << what << "\n" << skip.err;
  }
  EXPECT_EQ(read_jsonl(out).size(), 10u);
  EXPECT_EQ(Json::parse(skip.out)["skipped_lines"], Json(6));
  const std::vector<Json> errors = read_jsonl(dir_ / "out.errors.jsonl");
  ASSERT_EQ(errors.size(), 6u);
  EXPECT_EQ(errors[0]["line"], Json(11));
  EXPECT_EQ(errors[3]["id"], Json("big"));
}

TEST_F(BatchCli, TheInputIsNeverTakenForTheOutput) {
  const std::string requests = read_text_file_or_empty(in());
  std::filesystem::create_symlink(in(), dir_ / "link.jsonl");
  std::filesystem::copy_file(in(), dir_ / "copy.jsonl");
  // The same file by another name, through a symlink, and a copy of the requests (not results).
  const std::string relative = "./" + std::filesystem::relative(in()).string();
  for (const std::string& out : {relative, std::string(dir_ / "link.jsonl"), std::string(dir_ / "copy.jsonl")}) {
    const testing::ProcessResult r = run_plexus(batch_args(out));
    EXPECT_EQ(r.exit_code, 2) << out << "\n" << r.err;
    EXPECT_EQ(r.err.find("resumed"), std::string::npos) << r.err;
  }
  EXPECT_EQ(read_text_file_or_empty(in()), requests);
  EXPECT_EQ(read_text_file_or_empty(dir_ / "copy.jsonl"), requests);
}

TEST_F(BatchCli, EveryLineOfTheOutputIsOneResultForJq) {
  // jq (and pandas.read_json(lines=True), ...) read one result per line: no line that is not one.
  const std::string out = dir_ / "out.jsonl";
  ASSERT_EQ(run_plexus(batch_args(out)).exit_code, 0);
  const testing::ProcessResult jq = testing::run_command(
      "jq -c 'if .object == \"plexus.batch.result\" and (.id | type) == \"string\" and (.ids | type) == \"array\" "
      "then .id else error(\"not a result: \\(.)\") end' " + shell_quote(out));
  ASSERT_EQ(jq.exit_code, 0) << jq.err;
  std::stringstream ids(jq.out);
  std::set<std::string> seen;
  for (std::string id; std::getline(ids, id);) EXPECT_TRUE(seen.insert(id).second) << id << " twice";
  EXPECT_EQ(seen.size(), 10u) << jq.out;
  const std::string text = read_text_file_or_empty(out);
  EXPECT_EQ(text.rfind("{\"object\":\"plexus.batch.result\",\"id\":", 0), 0u) << text.substr(0, 200);
}

TEST_F(BatchCli, AnOutputOfTheFormerFormatIsResumed) {
  // Outputs written while plexus began them with a {"plexus_batch": ...} line are resumed: their
  // results are not run again and the new ones are appended after them.
  const std::string base = dir_ / "base.jsonl", out = dir_ / "out.jsonl";
  ASSERT_EQ(run_plexus(batch_args(base)).exit_code, 0);
  std::stringstream lines(read_text_file_or_empty(base));
  std::string old = "{\"plexus_batch\":\"results\",\"format\":1}\n";
  std::string line;
  for (int i = 0; i < 4 && std::getline(lines, line); ++i) {
    Json j = Json::parse(line);
    j.erase("object");  // the former format's result lines had no marker
    old += j.dump() + "\n";
  }
  std::ofstream(out) << old;
  const testing::ProcessResult r = run_plexus(batch_args(out, "--json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["resumed"], Json(4));
  EXPECT_EQ(Json::parse(r.out)["done"], Json(6));
  const std::string after = read_text_file_or_empty(out);
  EXPECT_EQ(after.substr(0, old.size()), old);  // kept as it was
  std::vector<Json> got = read_jsonl(out);
  ASSERT_EQ(got.size(), 11u);
  got.erase(got.begin());  // the former header
  std::map<std::string, Json> by_id;
  for (Json j : got) {
    j.erase("object"), j.erase("replica"), j.erase("latency_ms");
    by_id[j["id"].dump()] = j;
  }
  std::map<std::string, Json> want = results_by_id(base);
  for (auto& [id, j] : want) j.erase("object");
  EXPECT_EQ(by_id, want);
}

TEST_F(BatchCli, SkipSkipsEveryKindOfBadLine) {
  // Numbers no double holds, nesting 60000 deep in an id and in ids: each only its own line.
  std::ofstream(in(), std::ios::app) << "{\"id\": \"huge\", \"ids\": [1e400]}\n"
                                     << "{\"id\": " << std::string(60000, '[') << std::string(60000, ']') << "}\n"
                                     << "{\"id\": \"deep\", \"ids\": " << std::string(60000, '[') << std::string(60000, ']') << "}\n";
  const std::string out = dir_ / "out.jsonl";
  const testing::ProcessResult skip = run_plexus(batch_args(out, "--on-bad-line skip --json"));
  ASSERT_EQ(skip.exit_code, 0) << skip.err.substr(0, 2000);
  EXPECT_NE(skip.err.find(in() + ":11: not JSON"), std::string::npos) << skip.err.substr(0, 2000);
  EXPECT_NE(skip.err.find(in() + ":12: not JSON"), std::string::npos) << skip.err.substr(0, 2000);
  EXPECT_NE(skip.err.find("nested deeper than 256"), std::string::npos) << skip.err.substr(0, 2000);
  EXPECT_EQ(read_jsonl(out).size(), 10u);
  const std::vector<Json> errors = read_jsonl(dir_ / "out.errors.jsonl");
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0]["line"], Json(11));
  EXPECT_NE(errors[0]["error"].get<std::string>().find(in() + ":11:"), std::string::npos);
  EXPECT_EQ(errors[2]["line"], Json(13));
}

TEST_F(BatchCli, ARequestThatKeepsFailingGoesToTheErrorsFile) {
  const std::string out = dir_ / "out.jsonl";
  {
    testing::ScopedEnv fail("PLEXUS_BATCH_FAIL", "id=r4");
    const testing::ProcessResult r = run_plexus(batch_args(out, "--json"));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const Json s = Json::parse(r.out);
    EXPECT_EQ(s["failed"], Json(1));
    EXPECT_EQ(s["done"], Json(9));
    EXPECT_EQ(s["retries"], Json(2));
  }
  EXPECT_EQ(results_by_id(out).count("\"r4\""), 0u);
  EXPECT_EQ(read_jsonl(out).size(), 9u);  // its batch-mate was not blamed
  const std::vector<Json> errors = read_jsonl(dir_ / "out.errors.jsonl");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["id"], Json("r4"));
  EXPECT_EQ(errors[0]["attempts"], Json(3));
  EXPECT_EQ(errors[0]["line"], Json(5));
  EXPECT_NE(errors[0]["error"].get<std::string>().find("injected fault"), std::string::npos);
  // The next run retries it; the errors file then describes that run.
  const testing::ProcessResult again = run_plexus(batch_args(out, "--max-retries 0"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_jsonl(out).size(), 10u);
  EXPECT_TRUE(read_jsonl(dir_ / "out.errors.jsonl").empty());
}

TEST(BatchCliTokenizer, PromptsAreTokenizedAndResultsDecoded) {
  testing::TempDir dir("batch_tok");
  const std::string model = dir / "model";
  ASSERT_EQ(run_plexus("make-model " + shell_quote(model) + " --preset tiny --tokenizer " +
                       shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral"))
                .exit_code,
            0);
  std::ofstream(dir / "in.jsonl") << "{\"id\": 1, \"prompt\": \"Hello world\", \"max_tokens\": 3}\n{\"id\": \"x\", \"ids\": [1, 22557], \"max_tokens\": 2}\n";
  const testing::ProcessResult r = run_plexus("batch " + shell_quote(model) + " --input " + shell_quote(dir / "in.jsonl") +
                                              " --output " + shell_quote(dir / "out.jsonl") + " --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Json> lines = read_jsonl(dir / "out.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  for (const Json& l : lines) EXPECT_TRUE(l.contains("text") && l["text"].is_string()) << l.dump();
  const Json& hello = lines[0]["id"] == Json(1) ? lines[0] : lines[1];
  EXPECT_EQ(hello["prompt_tokens"], Json(3));  // <s> Hello world
}

TEST(BatchCliTokenizer, APromptTheRegexEngineCannotSplitIsOnlyABadLine) {
  // 10 MB of spaces hits PCRE2's match limit in Llama 3's pre-tokenizer: it ended the run (exit 1).
  testing::TempDir dir("batch_regex");
  const std::string model = dir / "model";
  ASSERT_EQ(run_plexus("make-model " + shell_quote(model) + " --preset tiny --tokenizer " +
                       shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3"))
                .exit_code,
            0);
  std::ofstream(dir / "in.jsonl") << "{\"id\": 1, \"prompt\": \"Hello world\", \"max_tokens\": 2}\n"
                                  << Json{{"id", 2}, {"prompt", std::string(10'000'000, ' ')}}.dump() << "\n";
  const std::string args = "batch " + shell_quote(model) + " --input " + shell_quote(dir / "in.jsonl") + " --output " +
                           shell_quote(dir / "out.jsonl") + " --threads 1";
  const testing::ProcessResult fail = run_plexus(args);
  EXPECT_EQ(fail.exit_code, 2) << fail.err;
  EXPECT_NE(fail.err.find("in.jsonl:2: \"prompt\" cannot be tokenized"), std::string::npos) << fail.err;
  const testing::ProcessResult skip = run_plexus(args + " --on-bad-line skip");
  ASSERT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_EQ(read_jsonl(dir / "out.jsonl").size(), 1u);
  const std::vector<Json> errors = read_jsonl(dir / "out.errors.jsonl");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["id"], Json(2));
  EXPECT_NE(errors[0]["error"].get<std::string>().find("regex engine's limit"), std::string::npos) << errors[0].dump();
}

TEST_F(BatchCli, UsageErrors) {
  EXPECT_EQ(run_plexus(batch_args(dir_ / "o.jsonl", "--on-bad-line maybe")).exit_code, 2);
  EXPECT_EQ(run_plexus(batch_args(dir_ / "o.jsonl", "--replicas 0")).exit_code, 2);
  EXPECT_EQ(run_plexus(batch_args(in())).exit_code, 2);  // output = input
  EXPECT_EQ(run_plexus("batch " + shell_quote(dir_ / "model") + " --input " + shell_quote(in())).exit_code, 2);
  const testing::ProcessResult missing = run_plexus("batch " + shell_quote(dir_ / "model") + " --input " +
                                                    shell_quote(dir_ / "nope.jsonl") + " --output " + shell_quote(dir_ / "o.jsonl"));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.jsonl"), std::string::npos);
  const testing::ProcessResult help = run_plexus("batch --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* flag : {"--input", "--output", "--replicas", "--max-sequences", "--max-retries", "--on-bad-line", "--virtual-devices"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace plexus
