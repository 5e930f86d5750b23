// Tool calls parsed from model output in the three formats, whole and streamed in every split.
#include "serve/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json.h"

namespace plexus {
namespace {

ToolCall call(const std::string& name, const std::string& args) { return ToolCall{name, Json::parse(args).dump()}; }

// The output streamed in pieces of `piece` bytes: the content and calls put together.
ParsedOutput streamed(ToolCallFormat f, const std::string& out, std::size_t piece) {
  ToolCallStream s(f);
  ParsedOutput all;
  auto add = [&](ParsedOutput p) {
    all.content += p.content;
    for (ToolCall& c : p.calls) all.calls.push_back(std::move(c));
  };
  for (std::size_t i = 0; i < out.size(); i += piece) add(s.feed(std::string_view(out).substr(i, piece)));
  add(s.finish());
  return all;
}

struct Case {
  ToolCallFormat format;
  std::string output;
  std::string content;
  std::vector<ToolCall> calls;
};

std::vector<Case> cases() {
  using F = ToolCallFormat;
  return {
      // Llama 3.1/3.2: the whole output, "parameters" (or "arguments"), ';' between calls.
      {F::kLlama3Json, R"({"name": "get_weather", "parameters": {"city": "Paris", "days": 3}})", "",
       {call("get_weather", R"({"city": "Paris", "days": 3})")}},
      {F::kLlama3Json, "<|python_tag|>{\"name\": \"a\", \"arguments\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": \"}{;\"}}", "",
       {call("a", "{}"), call("b", R"({"x": "}{;"})")}},
      {F::kLlama3Json, "  \n{\"name\": \"a\", \"parameters\": \"{\\\"k\\\": 1}\"}", "", {call("a", R"({"k": 1})")}},
      {F::kLlama3Json, "The weather is {\"name\": \"a\"}", "The weather is {\"name\": \"a\"}", {}},
      {F::kLlama3Json, "{\"name\": \"a\", \"parameters\": {\"x\": 1}", "{\"name\": \"a\", \"parameters\": {\"x\": 1}", {}},  // unclosed
      {F::kLlama3Json, "{\"city\": \"Paris\"}", "{\"city\": \"Paris\"}", {}},  // JSON, but no name
      // Hermes (Qwen3): text, then blocks; the last may be open at the end.
      {F::kHermes, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
       "Let me check.\n", {call("get_weather", R"({"city": "Oslo"})")}},
      {F::kHermes,
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"q\": \"</tool\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}",
       "", {call("a", R"({"q": "</tool"})"), call("b", "{}")}},
      {F::kHermes, "No tools needed: 2 + 2 = 4.", "No tools needed: 2 + 2 = 4.", {}},
      // Text after the calls, or a block that does not parse after one that does: content after them.
      {F::kHermes, "A <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> then B", "A  then B", {call("a", "{}")}},
      {F::kHermes, "<tool_call>{\"name\": \"a\"}</tool_call>\n<tool_call>{bad}</tool_call>", "\n<tool_call>{bad}</tool_call>",
       {call("a", "{}")}},
      {F::kHermes, "Hm <tool_call>{not json}</tool_call>", "Hm <tool_call>{not json}</tool_call>", {}},
      // Mistral: [TOOL_CALLS] and a list, or name[ARGS]{...} per call.
      {F::kMistral, "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, {\"name\": \"neg\", \"arguments\": {\"a\": 5}}]", "",
       {call("add", R"({"a": 1, "b": 2})"), call("neg", R"({"a": 5})")}},
      {F::kMistral, "Sure. [TOOL_CALLS]add[ARGS]{\"a\": 1}[TOOL_CALLS]neg[ARGS]{\"a\": [1, 2]}", "Sure. ",
       {call("add", R"({"a": 1})"), call("neg", R"({"a": [1, 2]})")}},
      {F::kMistral, "[TOOL_CALLS] oops", "[TOOL_CALLS] oops", {}},
      {F::kMistral, "A [TOOL_CALL] is not a marker.", "A [TOOL_CALL] is not a marker.", {}},
      // A JSON list (a grammar's, under tool_choice required): "parameters" or "arguments".
      {F::kJsonList, R"( [{"name": "a", "parameters": {"x": 1}}, {"name": "b", "arguments": {}}])", "",
       {call("a", R"({"x": 1})"), call("b", "{}")}},
      {F::kJsonList, R"([{"name": "a", "parameters": {"x": 1})", R"([{"name": "a", "parameters": {"x": 1})", {}},
      {F::kJsonList, "[]", "[]", {}},
      // A model without a tool format: all content.
      {F::kNone, "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>", "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>", {}},
  };
}

TEST(ToolCalls, EachFormatParsesWholeOutputs) {
  for (const Case& c : cases()) {
    const ParsedOutput p = parse_tool_calls(c.format, c.output);
    EXPECT_EQ(p.content, c.content) << format_name(c.format) << ": " << c.output;
    EXPECT_EQ(p.calls, c.calls) << format_name(c.format) << ": " << c.output;
  }
}

TEST(ToolCalls, StreamingGivesTheSameContentAndCallsForEverySplit) {
  for (const Case& c : cases()) {
    for (std::size_t piece : {1, 2, 3, 5, 7, 13, 1000}) {
      const ParsedOutput p = streamed(c.format, c.output, piece);
      EXPECT_EQ(p.content, c.content) << format_name(c.format) << " in pieces of " << piece << ": " << c.output;
      EXPECT_EQ(p.calls, c.calls) << format_name(c.format) << " in pieces of " << piece << ": " << c.output;
    }
  }
}

TEST(ToolCalls, StreamedContentFlowsBeforeACallAndEachHermesCallAsItCloses) {
  ToolCallStream s(ToolCallFormat::kHermes);
  EXPECT_EQ(s.feed("Checking the <to").content, "Checking the ");  // "<to" could start a marker
  EXPECT_EQ(s.feed("p> now").content, "<top> now");
  ParsedOutput p = s.feed(" <tool_call>{\"name\": \"a\", \"arguments\": {}}");
  EXPECT_EQ(p.content, " ");
  EXPECT_TRUE(p.calls.empty());
  p = s.feed("</tool_call>\n<tool_call>{\"name\": \"b\"}");  // the last block left open at the end
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "a");
  p = s.finish();
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "b");
  EXPECT_EQ(p.calls[0].arguments, "{}");

  ToolCallStream l(ToolCallFormat::kLlama3Json);
  EXPECT_EQ(l.feed(" ").content, "");
  EXPECT_EQ(l.feed("<|py").content, "");  // could be <|python_tag|>
  EXPECT_EQ(l.feed("thon is great").content, " <|python is great");
}

// The templates of the golden files name their format; flags name them too.
TEST(ToolCalls, TheGoldenTemplatesNameTheirFormat) {
  auto template_of = [](const std::string& model) {
    std::ifstream in(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/" + model + "/tokenizer_config.json");
    std::stringstream ss;
    ss << in.rdbuf();
    const Json j = Json::parse(ss.str());
    return j.at("chat_template").get<std::string>();
  };
  EXPECT_EQ(tool_call_format(template_of("qwen3")), ToolCallFormat::kHermes);
  // Llama 3.0's template has no tools (3.1's adds the ipython role and <|python_tag|>).
  EXPECT_EQ(tool_call_format(template_of("llama3")), ToolCallFormat::kNone);
  EXPECT_EQ(tool_call_format("{%- if message.role == 'ipython' %}...{{- '<|python_tag|>' }}"), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(tool_call_format("{{ messages }}"), ToolCallFormat::kNone);
  EXPECT_EQ(tool_call_format("{% if tools %}[AVAILABLE_TOOLS]...[TOOL_CALLS]{% endif %}"), ToolCallFormat::kMistral);
  for (ToolCallFormat f : {ToolCallFormat::kNone, ToolCallFormat::kLlama3Json, ToolCallFormat::kHermes, ToolCallFormat::kMistral}) {
    EXPECT_EQ(tool_call_format_named(format_name(f)), f);
  }
  EXPECT_THROW(tool_call_format_named("qwen"), InputError);
}

}  // namespace
}  // namespace plexus
