// Requests of the OpenAI-compatible API as plain values: POST /v1/completions and
// /v1/chat/completions bodies parsed and checked field by field (ApiError 400 naming the field
// and what it allows), before any tokenizing or templating.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "runtime/sampler.h"
#include "serve/chat_template.h"

namespace plexus {

inline constexpr int kMaxStopStrings = 4;
inline constexpr int kMaxCompletionLogprobs = 5;   // completions' "logprobs" (OpenAI's limit)
inline constexpr int kMaxChatTopLogprobs = 20;     // chat's "top_logprobs"
inline constexpr int kMaxChoices = 16;             // "n" (and no more than the server's --max-sequences)

// "tool_choice": whether the answer may, must, or must not call the request's tools.
struct ToolChoice {
  enum class Kind { kNone, kAuto, kRequired, kFunction };
  Kind kind = Kind::kNone;  // the default: kAuto with tools, kNone without
  std::string function;     // kFunction: the function's name (one of the tools)
};

// Structured output asked for: response_format {"type": "json_object"} or {"type":
// "json_schema", "json_schema": {"schema": ...}}, or plexus's "grammar" (docs/structured_output.md).
struct OutputFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema, kGrammar };
  Kind kind = Kind::kText;
  Json schema;          // kJsonSchema: the schema
  std::string grammar;  // kGrammar: its text
};

struct ApiRequest {
  bool chat = false;
  std::string model;  // "" when not given
  // /v1/completions: the prompt as text, or as token ids.
  std::optional<std::string> prompt_text;
  std::vector<std::int32_t> prompt_ids;
  // /v1/chat/completions: messages, tools and template variables (chat_template_kwargs).
  ChatInput chat_input;
  ToolChoice tool_choice;
  std::optional<std::int64_t> max_tokens;  // nullopt: completions 16, chat the rest of the context
  // temperature, top_p, top_k, min_p, seed, presence/frequency/repetition penalties, logit_bias
  // (token ids checked against the vocabulary by OpenAiApi::prepare).
  SamplingOptions sampling;
  bool seed_given = false;
  int n = 1;                                 // choices
  std::vector<std::string> stop;
  std::vector<std::int64_t> stop_token_ids;  // vLLM's extension: ids that end a choice (checked by prepare)
  bool echo = false;                         // the prompt (chat: the last message, if the assistant's) before the text
  bool stream = false, include_usage = false;
  // Log-probabilities: -1 none; k >= 0 the chosen token's and the top k (completions'
  // "logprobs": k; chat's "logprobs": true with "top_logprobs": k).
  int logprobs = -1;
  bool ignore_eos = false;  // vLLM's extension: generate past the end-of-sequence token
  OutputFormat format;
};

// Parse a request body (an object). ApiError 400 for a wrong type or value, naming the field.
ApiRequest parse_completion_request(const Json& body);
ApiRequest parse_chat_request(const Json& body);

// POST /tokenize: {"prompt": "..."} or {"messages": [...]} (then "add_generation_prompt",
// "tools", "chat_template_kwargs" too), "add_special_tokens" (default: true for a prompt, false
// for messages, as vLLM).
struct TokenizeRequest {
  std::optional<std::string> prompt;
  std::optional<ChatInput> chat;
  bool add_special_tokens = true;
};
TokenizeRequest parse_tokenize_request(const Json& body);
// POST /detokenize: {"tokens": [ids]}.
std::vector<std::int32_t> parse_detokenize_request(const Json& body);

// The chat fields (messages, tools, chat_template_kwargs) again from the raw body, their keys in
// the order the client wrote them (Json sorts keys): templates' `tojson` prints them that way,
// as transformers does. Call after the request parsed.
void keep_key_order(ChatInput& input, const std::string& body);

// The JSON values a request body may hold for a context of `context` tokens: every value of a
// prompt (a token id) or a conversation (a message's object, role, content) becomes a token or
// more of the prompt, so 4 per token, and 16384 for the fields beside them. Counted before the
// parse (brackets and commas, a linear scan), it bounds what parsing may allocate (~100-200 bytes
// a value) by the context, not by --max-body.
std::size_t max_body_values(std::int64_t context);

// The body as a JSON object: ApiError 400 for malformed JSON (with the parser's message and
// offset), a body nested too deep or holding more than `max_values` values (before parsing), or
// a value that is not an object.
Json parse_body(const std::string& body, std::size_t max_values = SIZE_MAX);

}  // namespace plexus
