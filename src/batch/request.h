// The requests of `plexus batch`: one JSON object per input line, checked and resolved against
// the command's defaults into what a replica runs. Bad lines are reported as FILE:LINE: reason.
// Two line formats, one per input file: plexus's own ({"id", "prompt" | "ids" | "messages", ...})
// and the OpenAI Batch API's ({"custom_id", "method", "url", "body"}); both bodies go through the
// server's request parser (batch/api_body.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "runtime/generate.h"
#include "serve/chat_template.h"
#include "serve/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace plexus::batch {

// plexus's own lines, or the OpenAI Batch API's (a line with "custom_id").
enum class LineFormat { kPlexus, kOpenAi };

// What a request leaves out: the command line's generation flags. plexus lines take all of them;
// OpenAI lines are answered as the server answers their bodies and take only the seed.
struct RequestDefaults {
  std::int64_t max_tokens = 32;
  SamplingOptions sampling;  // greedy unless --temperature; top-k / top-p / seed for every request
};

struct BatchRequest {
  Json id;              // as given in the input: plexus's "id" (a string or an integer), OpenAI's "custom_id"
  std::string key;      // id.dump(): identity for resume and duplicates ("7" and 7 differ)
  std::int64_t line = 0;  // 1-based line in the input
  SequenceRequest seq;  // prompt ids, max_tokens, sampling (seed included), end-of-sequence ids resolved
  bool chat = false;    // "messages" (OpenAI: /v1/chat/completions): the response is a chat completion
  std::vector<std::string> stop;  // stop strings: the text (and the tokens counted) end before the first
  int logprobs = -1;  // -1 none; k >= 0: each token's log-probability and the top k (serve's ApiRequest::logprobs)
  int choices = 1;  // "n": choice i samples with seed choice_seed(seed, i) (serve/serve_request.h), as serve's
  std::string echo;  // "echo": the text every choice's result starts with (serve's PreparedRequest::echo)
  // A chat with tools it may call: its answers are parsed for calls in this format (serve's
  // PreparedRequest::tool_format: kJsonList under tool_choice "required" or a named function).
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  // Structured output ("response_format", "grammar", tool_choice "required"): the grammar text
  // (checked) every choice must match, compiled by the replica that runs it; "" none.
  std::string grammar, grammar_source;
};

struct BadLine {
  std::int64_t line = 0;
  std::string reason;
  std::optional<Json> id;  // when the line had a usable id (OpenAI: its custom_id)
  std::string code = "invalid_request";  // the OpenAI error code (the server's, when its parser refused the body)
};

struct ParsedInput {
  LineFormat format = LineFormat::kPlexus;  // of every line (an empty input: plexus)
  std::vector<BatchRequest> requests;  // in input order
  std::vector<BadLine> bad;
};

// What checking a line needs: the tokenizer (null: "prompt", "messages" and OpenAI lines are
// refused), the chat template (null: "messages" refused), vocabulary size and context length of
// the model, the ids that end a generation (the command's: none under --ignore-eos).
struct ParseContext {
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;
  std::string chat_template_error;  // why the model's template could not be read (then chat_template is null)
  std::int64_t vocab_size = 0;
  std::int64_t max_context = 0;
  std::vector<std::int64_t> eos_ids;
  RequestDefaults defaults;
  ToolCallFormat tool_format = ToolCallFormat::kNone;  // --tool-call-parser (auto: the chat template's)
  int max_choices = 16;  // "n" at most: serve's kMaxChoices, or --max-sequences when fewer
};

// A line the server's parser refused: its message, and the OpenAI error code it gave.
class RefusedBody : public InputError {
 public:
  RefusedBody(const std::string& message, std::string code) : InputError(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// The format a line (a JSON object) is in: OpenAI's when it has "custom_id".
LineFormat line_format(const Json& line);

// One line (not blank), of either format. Throws InputError with the reason (no file or line)
// when bad (RefusedBody when the server's parser refused it, naming the field).
BatchRequest parse_request_line(const std::string& text, const ParseContext& context);

// Reads every line of `path` ("-" is not accepted: resume needs a file). Blank lines are
// skipped; a repeated id is a bad line naming the first one's line. InputError "FILE:LINE: ..."
// for a line of the other format than the first line's (one input, one output format);
// RuntimeError when the file cannot be read.
ParsedInput read_requests(const std::string& path, const ParseContext& context);

// "IN.jsonl:LINE: reason"
std::string describe_bad_line(const std::string& path, const BadLine& bad);

}  // namespace plexus::batch
