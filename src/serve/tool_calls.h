// Tool calls in a model's output, in the formats of the chat templates plexus ships goldens for,
// as vLLM's tool parsers read them:
//   - Llama 3.1/3.2 JSON: the whole output is one call or several separated by ';', each
//     {"name": ..., "parameters": {...}} ("arguments" also taken), after an optional
//     <|python_tag|>;
//   - Hermes, as Qwen2.5/Qwen3 write it: text, then <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//     blocks (the last may be left open at the end of the output);
//   - Mistral: text, then [TOOL_CALLS] and a JSON list of {"name", "arguments"} objects, or
//     (v11 templates) [TOOL_CALLS]name[ARGS]{...} once per call.
//   - a JSON list: the whole output is [{"name": ..., "parameters": {...}}, ...] — what a grammar
//     writes under tool_choice "required" or a named function, whatever the model's own format.
// Output that starts like a call but does not parse as one stays content, as in vLLM.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace plexus {

enum class ToolCallFormat { kNone, kLlama3Json, kHermes, kMistral, kJsonList };

// The format a chat template's source asks for: "[TOOL_CALLS]" → kMistral, "<tool_call>" →
// kHermes, "<|python_tag|>" or a mention of "parameters" in an ipython template → kLlama3Json;
// kNone when it mentions none of them (such a model's output is never parsed for calls).
ToolCallFormat tool_call_format(std::string_view template_source);
const char* format_name(ToolCallFormat format);  // none, llama3_json, hermes, mistral, json_list
// The format of a name format_name() gives (--tool-call-parser: not json_list); InputError for others.
ToolCallFormat tool_call_format_named(std::string_view name);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text, as OpenAI's function.arguments
  bool operator==(const ToolCall&) const = default;
};

struct ParsedOutput {
  std::string content;  // the text that is not a call
  std::vector<ToolCall> calls;
};

// A finished output split into content and calls.
ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view output);

// The same, as text arrives: feed() hands out content that can no longer be part of a call and
// each call once it is complete; finish() the rest. Text that could still become a call's
// marker (a prefix of it at the end) is held back until it cannot.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}
  ParsedOutput feed(std::string_view text);
  ParsedOutput finish();

 private:
  ToolCallFormat format_;
  std::string pending_;     // received, not handed out
  bool started_ = false;    // some non-space text arrived (Llama 3 JSON decides on its first character)
  bool in_calls_ = false;   // a call marker was seen: the rest is held for parsing
};

}  // namespace plexus
