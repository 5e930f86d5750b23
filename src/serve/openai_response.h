// The OpenAI API's response shapes: completions and chat completions (whole, or as server-sent
// event chunks), usage with our energy_j and time_s, and log-probabilities (the legacy
// completions shape and chat's "content" list).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "serve/serve_request.h"
#include "tokenizer/tokenizer.h"

namespace plexus {

inline constexpr const char* kSseDone = "data: [DONE]\n\n";

inline constexpr std::string_view kHexDigits = "0123456789abcdef";
// `prefix` and `length` characters drawn from `alphabet` (a per-thread generator seeded once).
std::string random_id(std::string_view prefix, int length, std::string_view alphabet);
// "cmpl-" or "chatcmpl-" and 24 random hex digits.
std::string new_completion_id(bool chat);
std::int64_t unix_time_now();

// One server-sent event: "data: JSON\n\n".
std::string sse_event(const Json& j);

// {"prompt_tokens", "completion_tokens", "total_tokens", "time_s", "energy_j"} (energy_j null
// without an energy source).
Json usage_json(std::int64_t prompt_tokens, std::int64_t completion_tokens, double time_s,
                std::optional<double> energy_j);

// The fields every response and chunk carries.
struct ResponseHeader {
  std::string id;
  std::int64_t created = 0;
  std::string model;
  bool chat = false;
};

// Log-probabilities of the tokens of a completion, gathered as they arrive and taken for each
// response or chunk: completions {tokens, token_logprobs, top_logprobs, text_offset}; chat
// {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
class LogprobsBuilder {
 public:
  LogprobsBuilder(const Tokenizer& tokenizer, bool chat) : tokenizer_(tokenizer), chat_(chat) {}
  // A token with its log-probabilities; `text_offset`: where its text starts in the completion.
  void add(const TokenEvent& token, std::size_t text_offset);
  // A token without any (the prompt's first, echoed: nothing precedes it): null logprob and
  // null top_logprobs. Completions' shape only.
  void add_unscored(std::int32_t id, std::size_t text_offset);
  // The text of one token, as its "token" entry shows it.
  std::string piece(std::int32_t id) const;
  bool empty() const { return count_ == 0; }
  // What was added since the last take(), in the endpoint's shape; then starts again.
  Json take();

 private:
  const Tokenizer& tokenizer_;
  bool chat_;
  std::size_t count_ = 0;
  Json tokens_ = Json::array(), token_logprobs_ = Json::array(), top_ = Json::array(), offsets_ = Json::array();
  Json content_ = Json::array();
};

// Completions' logprobs `b` appended to `a` (the echoed prompt's, then the completion's).
Json join_logprobs(Json a, const Json& b);

// One choice of a whole response.
struct ChoiceResult {
  std::string text, finish_reason;
  Json logprobs;    // null: not asked for
  Json tool_calls;  // null, or chat's [{"id", "type": "function", "function": {"name", "arguments"}}]
};

// "call_" and 24 random letters and digits; for Mistral's format 9 of them alone (its templates
// accept no other ids when the call comes back in the conversation).
std::string new_tool_call_id(bool mistral);
// {"id", "type": "function", "function": {"name", "arguments"}}; with `index` (a stream's delta) also "index".
Json tool_call_json(const std::string& id, const std::string& name, const std::string& arguments, int index = -1);
// A chat chunk of choice `index` whose delta carries `tool_calls` (each with its "index").
Json tool_calls_chunk(const ResponseHeader& h, const Json& tool_calls, int index);

// A whole response: object "text_completion" (choices {index, text, logprobs, finish_reason}) or
// "chat.completion" ({index, message {role, content[, tool_calls]}, logprobs, finish_reason}; a
// message with tool calls and no text has content null), one per choice, index their place in
// `choices`.
Json completion_response(const ResponseHeader& h, const std::vector<ChoiceResult>& choices, const Json& usage);
// A chunk of choice `index`: completions {index, text, logprobs, finish_reason}; chat {index,
// delta, logprobs, finish_reason}. `finish_reason` "" → null. `role`: the first chat chunk's delta
// carries role "assistant".
Json completion_chunk(const ResponseHeader& h, const std::string& text, const std::string& finish_reason,
                      const Json& logprobs, bool role = false, int index = 0);
// The usage chunk of stream_options.include_usage: empty choices.
Json usage_chunk(const ResponseHeader& h, const Json& usage);

// The API's finish_reason: "stop", "length", or for a request cut off (shutdown) "abort".
const char* api_finish_reason(FinishReason reason, bool stop_string_matched);

}  // namespace plexus
