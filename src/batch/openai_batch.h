// The OpenAI Batch API's line formats: an input line {"custom_id", "method": "POST", "url":
// "/v1/chat/completions" | "/v1/completions", "body": {...}}; a result line {"id":
// "batch_req_...", "custom_id", "response": {"status_code": 200, "request_id", "body": the
// server's response}, "error": null}; an error line {"id", "custom_id", "response": null,
// "error": {"code", "message", "line", ...}}.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "batch/journal.h"
#include "batch/request.h"
#include "batch/result_text.h"
#include "core/json.h"
#include "serve/openai_response.h"

namespace plexus::batch {

inline constexpr const char* kChatUrl = "/v1/chat/completions";
inline constexpr const char* kCompletionsUrl = "/v1/completions";

// One input line (an object with "custom_id"; `text`: the line as read, for the key order of
// messages). The request's id is its custom_id (a string). InputError or the server parser's
// ApiError when bad.
BatchRequest parse_openai_line(const Json& line, const std::string& text, const ParseContext& context);

// What the server would have answered, as the result line's text (one line, "id" first):
// `choices` in index order (as serve's OpenAiApi::complete makes them). `model`: the name in
// the response body; `time_s`: the request's time on its replica.
std::string openai_result_line(const BatchRequest& request, const std::string& model, const std::vector<ChoiceResult>& choices,
                               std::int64_t prompt_tokens, std::int64_t completion_tokens, double time_s);

// An errors-file line; `custom_id` null when the line had none; `attempts` 0: not run (a bad line).
std::string openai_error_line(const std::optional<Json>& custom_id, const std::string& code, const std::string& message,
                              std::int64_t line, int attempts);

// Outputs of OpenAI-format runs: every line a result line (resumed by custom_id).
const JournalFormat& openai_results_format();

}  // namespace plexus::batch
