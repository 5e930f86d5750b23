// `plexus batch` speaking the OpenAI API through the real binary, on a tiny random model with
// Llama 3's tokenizer and chat template: OpenAI Batch API lines answered with the body the real
// `plexus serve` gives for the same request, bad lines as FILE:LINE in the errors file's OpenAI
// shape, resume of an OpenAI-format output after a kill and a torn line, plexus lines with
// "messages" and the server's sampling fields.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "batch_test_util.h"
#include "core/json.h"
#include "server_process.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::by_custom_id;
using testing::comparable;
using testing::line;
using testing::read_jsonl;
using testing::run_plexus;
using testing::shell_quote;
using testing::write_lines;

const std::string kTokenizer = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3";
const Json kMessages = Json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi there"}}});

// One model for the suite (making it is the slow part).
struct Shared {
  testing::TempDir dir{"batch_openai"};
  std::string model = dir / "chat";
};
Shared* shared = nullptr;

class BatchOpenAi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared = new Shared;
    const testing::ProcessResult made = run_plexus("make-model " + shell_quote(shared->model) + " --tokenizer " + shell_quote(kTokenizer));
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  static void TearDownTestSuite() {
    delete shared;
    shared = nullptr;
  }
  std::string path(const std::string& name) const { return dir_ / name; }
  // `plexus batch MODEL --input IN --output OUT --threads 2 EXTRA`
  static testing::ProcessResult batch(const std::string& in, const std::string& out, const std::string& extra = "") {
    return run_plexus("batch " + shell_quote(shared->model) + " --input " + shell_quote(in) + " --output " + shell_quote(out) +
                      " --threads 2 " + extra);
  }
  testing::TempDir dir_{"batch_openai_case"};
};

TEST_F(BatchOpenAi, LinesAreAnsweredWithTheBodyTheServerGives) {
  testing::ServerProcess server(shell_quote(shared->model) + " --threads 2", dir_);
  ASSERT_TRUE(server.ok());
  const auto post = [&](const char* url, const Json& body) {
    const testing::HttpResult r = testing::curl("POST", server.url(url), body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  };
  // A stop string the greedy completion meets: the text of its tokens 5..8, so the answer is
  // the text of its first 4 tokens (or less, should the string come earlier), finish "stop".
  const Json greedy = {{"prompt", "The capital of France is"}, {"temperature", 0}};
  Json four = greedy, eight = greedy;
  four["max_tokens"] = 4;
  eight["max_tokens"] = 8;
  const std::string t4 = post("/v1/completions", four)["choices"][0]["text"], t8 = post("/v1/completions", eight)["choices"][0]["text"];
  ASSERT_GT(t8.size(), t4.size());
  Json stopped = greedy;
  stopped["max_tokens"] = 12;
  stopped["stop"] = Json::array({t8.substr(t4.size())});

  const std::vector<Json> lines = {
      line("chat-greedy", "/v1/chat/completions",
           {{"model", "gpt-4o-mini"}, {"messages", kMessages}, {"max_tokens", 8}, {"temperature", 0}}),
      line("chat-seeded", "/v1/chat/completions",
           {{"messages", kMessages}, {"max_completion_tokens", 6}, {"temperature", 0.9}, {"top_p", 0.9}, {"seed", 3}}),
      line("text-greedy", "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 10}, {"temperature", 0}}),
      line("ids-seeded", "/v1/completions",
           {{"prompt", Json::array({791, 6864, 315})}, {"temperature", 1.1}, {"top_k", 20}, {"seed", 5}, {"ignore_eos", true}}),
      line("stop-string", "/v1/completions", stopped),
  };
  const std::string in = path("in.jsonl"), out = path("out.jsonl");
  write_lines(in, lines);
  const testing::ProcessResult r = batch(in, out, "--max-sequences 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["done"], Json(5));
  EXPECT_EQ(read_jsonl(path("out.errors.jsonl")).size(), 0u);
  const std::map<std::string, Json> results = by_custom_id(out);
  ASSERT_EQ(results.size(), lines.size());
  for (Json l : lines) {
    const std::string id = l["custom_id"];
    const Json& got = results.at(id);
    EXPECT_TRUE(got["id"].get<std::string>().starts_with("batch_req_")) << got;
    EXPECT_EQ(got["error"], Json(nullptr));
    EXPECT_EQ(got["response"]["status_code"], Json(200));
    EXPECT_TRUE(got["response"]["request_id"].is_string());
    l["body"].erase("model");  // batch answers with its MODEL whatever the body names; the server would refuse another name
    const Json want = post(l["url"].get<std::string>().c_str(), l["body"]);
    EXPECT_EQ(comparable(got["response"]["body"]), comparable(want)) << id;
  }
  EXPECT_EQ(results.at("stop-string")["response"]["body"]["choices"][0]["finish_reason"], Json("stop"));
  EXPECT_LE(results.at("stop-string")["response"]["body"]["usage"]["completion_tokens"].get<int>(), 8);
  EXPECT_EQ(results.at("chat-greedy")["response"]["body"]["object"], Json("chat.completion"));
}

TEST_F(BatchOpenAi, BadLinesAreReportedByFileAndLineInTheOpenAiErrorShape) {
  const Json ok_body = {{"prompt", "Hello"}, {"max_tokens", 3}};
  std::vector<Json> lines = {line("ok", "/v1/completions", ok_body), line("url", "/v1/embeddings", ok_body)};
  Json streamed = ok_body, unknown = ok_body, hot = ok_body;
  streamed["stream"] = true;
  unknown["frobnicate"] = 1;
  hot["temperature"] = 101;
  lines.push_back(line("stream", "/v1/completions", streamed));
  lines.push_back(line("unknown", "/v1/completions", unknown));
  lines.push_back(line("hot", "/v1/completions", hot));
  lines.push_back(line("schema", "/v1/chat/completions",
                       {{"messages", kMessages},
                        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "objekt"}}}}}}}}));
  lines.push_back(line("ok", "/v1/completions", ok_body));  // a duplicate custom_id
  Json grammar = ok_body, many = ok_body, scored = ok_body;
  grammar["grammar"] = "root ::= \"a";
  many["n"] = 17;
  scored["logprobs"] = 1;
  scored["echo"] = true;
  lines.push_back(line("grammar", "/v1/completions", grammar));
  lines.push_back(line("many", "/v1/completions", many));
  lines.push_back(line("scored", "/v1/completions", scored));
  const std::string in = path("in.jsonl"), out = path("out.jsonl");
  write_lines(in, lines);

  const testing::ProcessResult fail = batch(in, out);
  EXPECT_EQ(fail.exit_code, 2) << fail.err;
  EXPECT_NE(fail.err.find(in + ":2: \"url\" must be \"/v1/chat/completions\" or \"/v1/completions\", got \"/v1/embeddings\""),
            std::string::npos) << fail.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  const testing::ProcessResult skip = batch(in, out, "--on-bad-line skip");
  ASSERT_EQ(skip.exit_code, 0) << skip.err;
  const std::map<int, std::string> reasons = {
      {3, "'stream': true is not supported in batch"}, {4, "unknown field \"body.frobnicate\""},
      {5, "'temperature' must be between 0 and 100, got 101"},
      {6, "response_format.json_schema.schema at '/type': "}, {7, "duplicate id \"ok\" (first on line 1)"},
      {8, "grammar line 1, column "}, {9, "'n' must be an integer between 1 and 16, got 17"},
      {10, "'echo' with 'logprobs' (the prompt's log-probabilities) is not supported in batch yet"}};
  for (const auto& [n, why] : reasons) {
    EXPECT_NE(skip.err.find(in + ":" + std::to_string(n) + ": " + why), std::string::npos) << why << "\n" << skip.err;
  }
  EXPECT_EQ(by_custom_id(out).count("ok"), 1u);
  const std::vector<Json> errors = read_jsonl(path("out.errors.jsonl"));
  ASSERT_EQ(errors.size(), 9u);
  for (const Json& e : errors) {
    EXPECT_TRUE(e["id"].get<std::string>().starts_with("batch_req_")) << e;
    EXPECT_EQ(e["response"], Json(nullptr)) << e;
    EXPECT_TRUE(e["error"]["code"].is_string() && e["error"]["message"].is_string()) << e;
  }
  EXPECT_EQ(errors[0]["custom_id"], Json("url"));
  EXPECT_EQ(errors[0]["error"]["line"], Json(2));
  EXPECT_EQ(errors[3]["custom_id"], Json("hot"));
  EXPECT_NE(errors[3]["error"]["message"].get<std::string>().find(in + ":5: 'temperature'"), std::string::npos) << errors[3];
  EXPECT_EQ(errors[5]["custom_id"], Json(nullptr));  // the duplicate's: its custom_id is the first line's
  EXPECT_EQ(errors[6]["custom_id"], Json("grammar"));
  EXPECT_EQ(errors[6]["error"]["code"], Json("invalid_request"));

  // One input, one format: a plexus line among OpenAI ones is exit 2 naming it, even with skip.
  std::ofstream(in, std::ios::app) << "{\"id\": \"own\", \"prompt\": \"Hello\"}\n";
  const testing::ProcessResult mixed = batch(in, path("mixed.jsonl"), "--on-bad-line skip");
  EXPECT_EQ(mixed.exit_code, 2) << mixed.err;
  EXPECT_NE(mixed.err.find(in + ":11: a plexus batch line (with \"id\") after an OpenAI Batch API line (with \"custom_id\") on line 1"),
            std::string::npos) << mixed.err;
  EXPECT_FALSE(std::filesystem::exists(path("mixed.jsonl")));
}

TEST_F(BatchOpenAi, AnOpenAiOutputResumesAfterAKillAndATornLine) {
  std::vector<Json> lines;
  for (int i = 0; i < 6; ++i) {
    const Json body = {{"prompt", "Request number " + std::to_string(i)}, {"max_tokens", 3 + i % 3}, {"temperature", i % 2 ? 0.8 : 0.0}};
    lines.push_back(line("r" + std::to_string(i), "/v1/completions", body));
  }
  const std::string in = path("in.jsonl"), base = path("base.jsonl"), out = path("out.jsonl");
  write_lines(in, lines);
  ASSERT_EQ(batch(in, base, "--max-sequences 2").exit_code, 0);
  {
    testing::ScopedEnv kill("PLEXUS_BATCH_FAIL", "kill_after=2");
    const testing::ProcessResult crashed = batch(in, out, "--max-sequences 2");
    EXPECT_EQ(crashed.exit_code, 128 + 9) << crashed.err;
  }
  EXPECT_EQ(read_jsonl(out).size(), 2u);
  // The start of a third result, as a crash in the middle of its write leaves it.
  const std::string kept = read_text_file_or_empty(out);
  std::ofstream(out, std::ios::app) << R"({"id":"batch_req_0123)";
  const testing::ProcessResult resumed = batch(in, out, "--max-sequences 2 --json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("torn last line (21 bytes)"), std::string::npos) << resumed.err;
  EXPECT_EQ(Json::parse(resumed.out)["resumed"], Json(2));
  EXPECT_EQ(Json::parse(resumed.out)["done"], Json(4));
  EXPECT_EQ(read_text_file_or_empty(out).substr(0, kept.size()), kept);  // what was synced stays as it was
  const std::map<std::string, Json> want = by_custom_id(base), got = by_custom_id(out);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [id, l] : want) {
    EXPECT_EQ(comparable(got.at(id)["response"]["body"]), comparable(l["response"]["body"])) << id;
  }
  // An OpenAI input is not resumed onto an output of plexus lines, nor the other way round.
  std::ofstream(path("own.jsonl")) << "{\"id\": \"a\", \"prompt\": \"Hello\", \"max_tokens\": 2}\n";
  ASSERT_EQ(batch(path("own.jsonl"), path("own-out.jsonl")).exit_code, 0);
  const testing::ProcessResult wrong = batch(in, path("own-out.jsonl"));
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("not one of OpenAI Batch API result lines"), std::string::npos) << wrong.err;
  EXPECT_EQ(batch(path("own.jsonl"), out).exit_code, 2);
}

TEST_F(BatchOpenAi, PlexusLinesTakeMessagesAndTheServersSamplingFields) {
  // The same chat as a plexus line and as an OpenAI line: the same text and tokens. Plexus lines
  // take the command's defaults (greedy, --max-tokens) for what they leave out.
  const std::string own = path("own.jsonl"), own_out = path("own-out.jsonl");
  {
    std::ofstream f(own);
    f << Json{{"id", "chat"}, {"messages", kMessages}}.dump() << "\n";
    f << Json{{"id", "sampled"}, {"prompt", "Once upon a time"}, {"temperature", 0.9}, {"top_p", 0.8}, {"top_k", 30}, {"seed", 4},
              {"max_tokens", 7}}.dump()
      << "\n";
    f << Json{{"id", "unknown"}, {"prompt", "Hi"}, {"max_token", 3}}.dump() << "\n";
  }
  const testing::ProcessResult r = batch(own, own_out, "--max-tokens 6 --on-bad-line skip");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(own + ":3: unknown field \"max_token\""), std::string::npos) << r.err;
  const std::map<std::string, Json> mine = testing::results_by_id(own_out);
  ASSERT_EQ(mine.size(), 2u);

  const std::string in = path("in.jsonl"), out = path("out.jsonl");
  write_lines(in, {line("chat", "/v1/chat/completions", {{"messages", kMessages}, {"max_tokens", 6}, {"temperature", 0}}),
                   line("sampled", "/v1/completions",
                        {{"prompt", "Once upon a time"}, {"temperature", 0.9}, {"top_p", 0.8}, {"top_k", 30}, {"seed", 4},
                         {"max_tokens", 7}})});
  ASSERT_EQ(batch(in, out).exit_code, 0);
  const std::map<std::string, Json> theirs = by_custom_id(out);
  for (const char* id : {"chat", "sampled"}) {
    const Json& a = mine.at(std::string("\"") + id + "\"");
    const Json& b = theirs.at(id)["response"]["body"];
    const Json& choice = b["choices"][0];
    EXPECT_EQ(a["text"], choice.contains("message") ? choice["message"]["content"] : choice["text"]) << id;
    EXPECT_EQ(a["completion_tokens"], b["usage"]["completion_tokens"]) << id;
    EXPECT_EQ(a["prompt_tokens"], b["usage"]["prompt_tokens"]) << id;
    EXPECT_EQ(a["finish_reason"], choice["finish_reason"]) << id;
  }
  EXPECT_EQ(mine.at("\"chat\"")["completion_tokens"], Json(6));  // --max-tokens
}

}  // namespace
}  // namespace plexus
