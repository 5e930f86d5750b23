// Structured output, choices and tool calls in `plexus batch`, through the real binary on a tiny
// random model with Llama 3's tokenizer and chat template: every JSON Schema output validates
// against its schema, grammar outputs match the grammar, "n" gives n choices, tool_choice makes
// calls, logprobs come with every token; the bodies equal what the real `plexus serve` answers, whatever the replicas (threads,
// a resume after a kill, MPI ranks, which receive the grammar in the task's JSON).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

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

const std::string kStructuredTokenizer = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3";
const Json kAsk = Json::array({{{"role", "user"}, {"content", "Answer in JSON."}}});

bool is_int_in(const Json& v, long long lo, long long hi) {
  return v.is_number_integer() && v.get<long long>() >= lo && v.get<long long>() <= hi;
}

bool keys_within(const Json& v, const std::set<std::string>& allowed) {
  for (const auto& [k, _] : v.items()) {
    if (!allowed.count(k)) return false;
  }
  return true;
}

// JSON Schemas without free strings (so a random model's output ends well within max_tokens),
// each with a check of what it demands written out by hand: an oracle independent of the
// schema compiler.
struct SchemaCase {
  std::string id;
  Json schema;
  bool (*valid)(const Json&);
};

const std::vector<SchemaCase>& schema_cases() {
  static const std::vector<SchemaCase> cases = {
      {"object-required",
       {{"type", "object"},
        {"properties", {{"a", {{"type", "integer"}, {"minimum", -5}, {"maximum", 5}}}, {"flag", {{"type", "boolean"}}}}},
        {"required", {"a", "flag"}},
        {"additionalProperties", false}},
       [](const Json& v) {
         return v.is_object() && v.contains("a") && is_int_in(v["a"], -5, 5) && v.contains("flag") && v["flag"].is_boolean() &&
                keys_within(v, {"a", "flag"});
       }},
      {"array",
       {{"type", "array"}, {"items", {{"enum", {"red", "green", "blue"}}}}, {"minItems", 1}, {"maxItems", 3}},
       [](const Json& v) {
         if (!v.is_array() || v.empty() || v.size() > 3) return false;
         for (const Json& x : v) {
           if (x != Json("red") && x != Json("green") && x != Json("blue")) return false;
         }
         return true;
       }},
      {"enum", {{"enum", {"yes", "no", 3, nullptr}}},
       [](const Json& v) { return v == Json("yes") || v == Json("no") || v == Json(3) || v.is_null(); }},
      {"number-bounds", {{"type", "integer"}, {"minimum", 10}, {"exclusiveMaximum", 250}},
       [](const Json& v) { return is_int_in(v, 10, 249); }},
      {"nested",
       {{"type", "object"},
        {"properties",
         {{"point",
           {{"type", "object"},
            {"properties", {{"x", {{"type", "integer"}, {"minimum", 0}, {"maximum", 99}}}, {"y", {{"type", "integer"}, {"minimum", 0}, {"maximum", 99}}}}},
            {"required", {"x", "y"}},
            {"additionalProperties", false}}},
          {"tags", {{"type", "array"}, {"items", {{"type", "boolean"}}}, {"maxItems", 2}}}}},
        {"required", {"point"}},
        {"additionalProperties", false}},
       [](const Json& v) {
         if (!v.is_object() || !keys_within(v, {"point", "tags"}) || !v.contains("point")) return false;
         const Json& p = v["point"];
         if (!p.is_object() || !keys_within(p, {"x", "y"}) || !p.contains("x") || !p.contains("y")) return false;
         if (!is_int_in(p["x"], 0, 99) || !is_int_in(p["y"], 0, 99)) return false;
         if (!v.contains("tags")) return true;
         if (!v["tags"].is_array() || v["tags"].size() > 2) return false;
         for (const Json& t : v["tags"]) {
           if (!t.is_boolean()) return false;
         }
         return true;
       }},
  };
  return cases;
}

Json schema_format(const Json& schema) {
  return {{"type", "json_schema"}, {"json_schema", {{"name", "answer"}, {"schema", schema}}}};
}

Json weather_tools() {
  const Json city = {{"type", "object"},
                     {"properties", {{"city", {{"enum", {"Paris", "Rome"}}}}}},
                     {"required", {"city"}},
                     {"additionalProperties", false}};
  const Json zone = {{"type", "object"},
                     {"properties", {{"utc", {{"type", "boolean"}}}}},
                     {"required", {"utc"}},
                     {"additionalProperties", false}};
  return Json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", city}}}},
                      {{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", zone}}}}});
}

const char* kGrammar = "root ::= (\"yes\" | \"no\") \".\" [0-9]{1,3}";

// The mixed input: plain, each schema (chat, sampled), json_object, a schema cut by max_tokens,
// a grammar, n = 3 (plain and with a schema), tool_choice "required" and a named function, tools
// left to the model, echo, logprobs (with n = 2, and in a chat with a schema).
std::vector<Json> mixed_lines() {
  std::vector<Json> lines;
  lines.push_back(line("plain", "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}}));
  int seed = 1;
  for (const SchemaCase& c : schema_cases()) {
    lines.push_back(line("schema-" + c.id, "/v1/chat/completions",
                         {{"messages", kAsk}, {"max_tokens", 120}, {"temperature", 0.8}, {"seed", seed++},
                          {"response_format", schema_format(c.schema)}}));
  }
  lines.push_back(line("json-object", "/v1/chat/completions",
                       {{"messages", kAsk}, {"max_tokens", 24}, {"temperature", 0}, {"response_format", {{"type", "json_object"}}}}));
  lines.push_back(line("cut", "/v1/chat/completions",
                       {{"messages", kAsk}, {"max_tokens", 3}, {"temperature", 0},
                        {"response_format", schema_format(schema_cases()[0].schema)}}));
  lines.push_back(line("grammar", "/v1/completions",
                       {{"prompt", "Is it?"}, {"max_tokens", 20}, {"temperature", 1.0}, {"seed", 4}, {"grammar", kGrammar}}));
  lines.push_back(line("n3", "/v1/completions", {{"prompt", "Say"}, {"max_tokens", 5}, {"temperature", 1.0}, {"seed", 7}, {"n", 3}}));
  lines.push_back(line("n3-schema", "/v1/chat/completions",
                       {{"messages", kAsk}, {"max_tokens", 40}, {"temperature", 1.0}, {"seed", 8}, {"n", 3},
                        {"response_format", schema_format(schema_cases()[2].schema)}}));
  lines.push_back(line("tools-required", "/v1/chat/completions",
                       {{"messages", kAsk}, {"max_tokens", 120}, {"temperature", 0.7}, {"seed", 2}, {"tools", weather_tools()},
                        {"tool_choice", "required"}}));
  lines.push_back(line("tools-named", "/v1/chat/completions",
                       {{"messages", kAsk}, {"max_tokens", 120}, {"temperature", 0.7}, {"seed", 3}, {"tools", weather_tools()},
                        {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}}));
  lines.push_back(line("tools-auto", "/v1/chat/completions",
                       {{"messages", kAsk}, {"max_tokens", 8}, {"temperature", 0}, {"tools", weather_tools()}}));
  lines.push_back(line("echo", "/v1/completions", {{"prompt", "Echo me"}, {"max_tokens", 3}, {"temperature", 0}, {"echo", true}}));
  lines.push_back(line("logprobs", "/v1/completions",
                       {{"prompt", "Say"}, {"max_tokens", 4}, {"temperature", 1.0}, {"seed", 5}, {"n", 2}, {"logprobs", 2}}));
  lines.push_back(line("logprobs-schema", "/v1/chat/completions",
                       {{"messages", kAsk}, {"max_tokens", 40}, {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 3},
                        {"response_format", schema_format(schema_cases()[2].schema)}}));
  return lines;
}

// One model for the suite (making it is the slow part).
struct StructuredModel {
  testing::TempDir dir{"batch_structured"};
  std::string model = dir / "chat";
};
StructuredModel* structured_model = nullptr;

class BatchStructured : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    structured_model = new StructuredModel;
    const testing::ProcessResult made = run_plexus("make-model " + shell_quote(structured_model->model) + " --tokenizer " + shell_quote(kStructuredTokenizer));
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  static void TearDownTestSuite() {
    delete structured_model;
    structured_model = nullptr;
  }
  std::string path(const std::string& name) const { return dir_ / name; }
  static std::string batch_args(const std::string& in, const std::string& out, const std::string& extra = "") {
    return "batch " + shell_quote(structured_model->model) + " --input " + shell_quote(in) + " --output " + shell_quote(out) +
           " --threads 2 " + extra;
  }
  // Every result's body by custom_id, comparable across runs.
  static std::map<std::string, Json> bodies(const std::string& out) {
    std::map<std::string, Json> b;
    for (const auto& [id, l] : by_custom_id(out)) b[id] = comparable(l["response"]["body"]);
    return b;
  }
  testing::TempDir dir_{"batch_structured_case"};
};

std::string text_of(const Json& choice) {
  if (choice.contains("text")) return choice["text"].get<std::string>();
  const Json& content = choice["message"]["content"];
  return content.is_string() ? content.get<std::string>() : "";
}

TEST_F(BatchStructured, StructuredChoicesAndToolsAsTheServerAnswersThem) {
  const std::vector<Json> lines = mixed_lines();
  const std::string in = path("in.jsonl"), out = path("out.jsonl");
  write_lines(in, lines);
  const testing::ProcessResult r = run_plexus(batch_args(in, out, "--max-sequences 4 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["done"], Json(lines.size()));
  const std::map<std::string, Json> got = bodies(out);
  ASSERT_EQ(got.size(), lines.size());

  // Every schema's output is complete and valid; a cut one says "length".
  for (const SchemaCase& c : schema_cases()) {
    const Json& choice = got.at("schema-" + c.id)["choices"][0];
    ASSERT_EQ(choice["finish_reason"], Json("stop")) << c.id << ": " << choice;
    const std::string text = text_of(choice);
    const Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(value.is_discarded()) << c.id << ": not JSON: " << text;
    EXPECT_TRUE(c.valid(value)) << c.id << ": " << text << " breaks " << c.schema;
  }
  EXPECT_EQ(got.at("cut")["choices"][0]["finish_reason"], Json("length"));
  EXPECT_EQ(got.at("cut")["usage"]["completion_tokens"], Json(3));
  {
    const Json& choice = got.at("json-object")["choices"][0];
    if (choice["finish_reason"] == Json("stop")) {
      EXPECT_TRUE(Json::parse(text_of(choice)).is_object()) << choice;
    }
  }
  const Json& g = got.at("grammar")["choices"][0];
  EXPECT_EQ(g["finish_reason"], Json("stop"));
  EXPECT_TRUE(std::regex_match(text_of(g), std::regex(R"((yes|no)\.[0-9]{1,3})"))) << g;

  // n: 3 choices in index order, not all the same (each its own seed); with a schema, each valid.
  for (const char* id : {"n3", "n3-schema"}) {
    const Json& choices = got.at(id)["choices"];
    ASSERT_EQ(choices.size(), 3u) << id;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(choices[i]["index"], Json(i)) << id;
  }
  const Json& n3 = got.at("n3")["choices"];
  EXPECT_FALSE(text_of(n3[0]) == text_of(n3[1]) && text_of(n3[1]) == text_of(n3[2])) << n3;
  for (const Json& c : got.at("n3-schema")["choices"]) {
    ASSERT_EQ(c["finish_reason"], Json("stop")) << c;
    EXPECT_TRUE(schema_cases()[2].valid(Json::parse(text_of(c)))) << c;
  }

  // tool_choice "required": calls of the request's tools with valid arguments; a named function: that one.
  for (const auto& [id, names] : std::map<std::string, std::set<std::string>>{{"tools-required", {"get_weather", "get_time"}},
                                                                              {"tools-named", {"get_time"}}}) {
    const Json& choice = got.at(id)["choices"][0];
    ASSERT_EQ(choice["finish_reason"], Json("tool_calls")) << id << ": " << choice;
    EXPECT_TRUE(choice["message"]["content"].is_null()) << choice;
    ASSERT_GE(choice["message"]["tool_calls"].size(), 1u) << choice;
    for (const Json& call : choice["message"]["tool_calls"]) {
      const std::string name = call["function"]["name"];
      EXPECT_TRUE(names.count(name)) << id << ": " << name;
      const Json args = Json::parse(call["function"]["arguments"].get<std::string>());
      if (name == "get_weather") {
        EXPECT_TRUE(args == Json({{"city", "Paris"}}) || args == Json({{"city", "Rome"}})) << args;
      }
      if (name == "get_time") {
        EXPECT_TRUE(args.size() == 1 && args["utc"].is_boolean()) << args;
      }
    }
  }
  EXPECT_EQ(got.at("tools-named")["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_TRUE(text_of(got.at("echo")["choices"][0]).starts_with("Echo me"));
  // logprobs: one entry per token of each choice, the top k beside it.
  for (const Json& c : got.at("logprobs")["choices"]) {
    ASSERT_EQ(c["logprobs"]["tokens"].size(), 4u) << c;
    for (const Json& top : c["logprobs"]["top_logprobs"]) EXPECT_EQ(top.size(), 2u) << c;
  }
  const Json& content = got.at("logprobs-schema")["choices"][0]["logprobs"]["content"];
  ASSERT_GE(content.size(), 1u);
  for (const Json& t : content) EXPECT_EQ(t["top_logprobs"].size(), 3u) << t;

  // For ajv (the batch_structured_ajv test, an implementation of JSON Schema independent of
  // plexus): every schema output as {"schema", "text", "finish_reason"}, kSchemaOutputs lines.
  if (const char* file = std::getenv("PLEXUS_BATCH_SCHEMA_OUTPUTS")) {
    std::ofstream f(file);
    for (const SchemaCase& c : schema_cases()) {
      const Json& choice = got.at("schema-" + c.id)["choices"][0];
      f << Json{{"schema", c.schema}, {"text", text_of(choice)}, {"finish_reason", choice["finish_reason"]}}.dump() << "\n";
    }
    for (const Json& choice : got.at("n3-schema")["choices"]) {
      f << Json{{"schema", schema_cases()[2].schema}, {"text", text_of(choice)}, {"finish_reason", choice["finish_reason"]}}.dump() << "\n";
    }
  }

  // The same bodies from the real server.
  {
    testing::ServerProcess server(shell_quote(structured_model->model) + " --threads 2", dir_);
    ASSERT_TRUE(server.ok());
    for (const Json& l : lines) {
      const std::string id = l["custom_id"];
      const testing::HttpResult res = testing::curl("POST", server.url(l["url"].get<std::string>()), l["body"].dump());
      ASSERT_EQ(res.status, 200) << id << ": " << res.body;
      EXPECT_EQ(got.at(id), comparable(res.json())) << id;
    }
  }

  // Two replicas taking requests two at a time give the same bodies; so does a resume after a kill.
  const std::string two = path("two.jsonl"), killed = path("killed.jsonl");
  ASSERT_EQ(run_plexus(batch_args(in, two, "--replicas 2 --max-sequences 3")).exit_code, 0);
  EXPECT_EQ(bodies(two), got);
  {
    testing::ScopedEnv kill("PLEXUS_BATCH_FAIL", "kill_after=5");
    EXPECT_EQ(run_plexus(batch_args(in, killed, "--max-sequences 4")).exit_code, 128 + 9);
  }
  EXPECT_EQ(read_jsonl(killed).size(), 5u);
  const testing::ProcessResult resumed = run_plexus(batch_args(in, killed, "--max-sequences 4 --json"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Json::parse(resumed.out)["resumed"], Json(5));
  EXPECT_EQ(bodies(killed), got);
}

TEST_F(BatchStructured, PlexusLinesGetEveryChoiceAndTheirCalls) {
  const std::string in = path("in.jsonl"), out = path("out.jsonl");
  {
    std::ofstream f(in);
    f << Json{{"id", "n"}, {"prompt", "Say"}, {"temperature", 1.0}, {"seed", 7}, {"n", 3}, {"max_tokens", 5}}.dump() << "\n";
    f << Json{{"id", "t"}, {"messages", kAsk}, {"tools", weather_tools()}, {"tool_choice", "required"}, {"max_tokens", 120},
              {"temperature", 0.7}, {"seed", 2}}.dump()
      << "\n";
  }
  ASSERT_EQ(run_plexus(batch_args(in, out)).exit_code, 0);
  const std::map<std::string, Json> mine = testing::results_by_id(out);
  // The same requests as OpenAI lines.
  std::vector<Json> lines;
  for (const Json& l : mixed_lines()) {
    if (l["custom_id"] == Json("n3") || l["custom_id"] == Json("tools-required")) lines.push_back(l);
  }
  ASSERT_EQ(lines.size(), 2u);
  const std::string oin = path("openai.jsonl"), oout = path("openai-out.jsonl");
  write_lines(oin, lines);
  ASSERT_EQ(run_plexus(batch_args(oin, oout)).exit_code, 0);
  const std::map<std::string, Json> theirs = bodies(oout);

  const Json& n = mine.at("\"n\"");
  ASSERT_EQ(n["choices"].size(), 3u) << n;
  for (int i = 0; i < 3; ++i) {
    const Json& c = n["choices"][i];
    EXPECT_EQ(c["index"], Json(i));
    EXPECT_EQ(c["text"], theirs.at("n3")["choices"][i]["text"]) << i;
    EXPECT_EQ(c["finish_reason"], theirs.at("n3")["choices"][i]["finish_reason"]) << i;
    EXPECT_EQ(c["ids"].size(), c["completion_tokens"].get<std::size_t>());
  }
  EXPECT_EQ(n["text"], n["choices"][0]["text"]);  // the top-level fields are choice 0's
  const Json& t = mine.at("\"t\"");
  EXPECT_EQ(t["finish_reason"], Json("tool_calls"));
  Json calls = t["tool_calls"];
  for (Json& c : calls) c.erase("id");
  EXPECT_EQ(calls, theirs.at("tools-required")["choices"][0]["message"]["tool_calls"]);
}

// Under mpirun the grammar reaches the worker rank in the task's JSON and is compiled there, and
// the log-probabilities come back in the outcome's: the same bodies as one process.
TEST_F(BatchStructured, GrammarsTravelToMpiWorkers) {
  if (!testing::have_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const std::vector<Json> all = mixed_lines();
  std::vector<Json> lines;
  for (const Json& l : all) {
    const std::string id = l["custom_id"];
    if (id == "schema-nested" || id == "grammar" || id == "n3-schema" || id == "tools-named" || id == "logprobs") lines.push_back(l);
  }
  ASSERT_EQ(lines.size(), 5u);
  const std::string in = path("in.jsonl"), one = path("one.jsonl"), mpi = path("mpi.jsonl");
  write_lines(in, lines);
  ASSERT_EQ(run_plexus(batch_args(in, one)).exit_code, 0);
  const testing::ProcessResult r = testing::run_mpi(2, batch_args(in, mpi, "--json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["done"], Json(5));
  EXPECT_EQ(bodies(mpi), bodies(one));
  EXPECT_EQ(bodies(mpi).at("schema-nested")["choices"][0]["finish_reason"], Json("stop"));
}

}  // namespace
}  // namespace plexus
