// The OpenAI-compatible API without the HTTP: a parsed request is checked against the served
// model (its name, context, tokenizer, chat template), tokenized or rendered, submitted to the
// scheduler, and answered as a whole response or as server-sent event chunks. The HTTP server
// (serve/http_server.h) maps routes and errors onto it; tests drive it with a fake submit.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "serve/chat_template.h"
#include "serve/metrics.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "serve/scheduler.h"
#include "serve/tool_calls.h"
#include "structured/grammar_cache.h"
#include "structured/vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace plexus {

// The served model, as the API needs it.
struct ServedModel {
  std::string name;                     // --served-model-name (default: MODEL as given)
  std::int64_t created = 0;             // unix time the server loaded it
  std::int64_t max_model_len = 0;       // prompt + completion tokens per request at most
  std::int64_t vocab_size = 0;
  const Tokenizer* tokenizer = nullptr;        // required
  const ChatTemplate* chat_template = nullptr;  // null: the model has none (chat requests → 400)
  std::vector<std::int64_t> eos_ids;            // end-of-sequence ids
  // How the model writes tool calls (--tool-call-parser; by default what the template asks for):
  // kNone leaves a chat answer's text unparsed.
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  // Structured output (response_format, grammar, tool_choice "required"): the vocabulary as
  // grammars see it and the cache of compiled grammars; null: such requests get 400.
  std::shared_ptr<const structured::Vocabulary> vocabulary;
  structured::GrammarCache* grammars = nullptr;
  // false (plexus batch): a structured request's grammar is checked (parsed) but not compiled:
  // its text is left in PreparedRequest::grammar for whoever runs the request (no vocabulary here).
  bool compile_grammars = true;
  int max_choices = kMaxChoices;                // "n" at most: kMaxChoices, or fewer (--max-sequences)
  // The scheduler's submit (tests: a fake). Throws InputError, QueueFull, ShuttingDown.
  std::function<std::shared_ptr<RequestStream>(ServeRequest)> submit;
};

// A generation request checked and tokenized, ready to submit.
struct PreparedRequest {
  ApiRequest api;
  ServeRequest serve;
  std::string echo;  // with "echo": the text every choice starts with (the prompt; chat: the last assistant message)
  // A chat request with tools the model may call: its answers are parsed for calls in this format
  // (kJsonList under tool_choice "required" or a named function, which a grammar writes).
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  // Structured output: the text of the grammar serve.constraint matches (grammar_parser.h) and
  // what it came from, as messages name it; "" when the request has none.
  std::string grammar, grammar_source;
  std::string id;
  std::int64_t created = 0;
};

// A whole answer parsed for tool calls in `format` (kNone: left as it is): when it holds calls,
// they go to r.tool_calls (each with a new id), the rest of the text stays in r.text and
// finish_reason becomes "tool_calls". `echo`: the prefix r.text starts with (never parsed).
void take_tool_calls(ToolCallFormat format, const std::string& echo, ChoiceResult& r);

class OpenAiApi {
 public:
  // `metrics` may be null.
  OpenAiApi(const ServedModel& model, Metrics* metrics) : model_(model), metrics_(metrics) {}

  // Checks the model name (404 model_not_found), tokenizes the prompt or renders the chat
  // template (400 with the template's message), checks the length against the context (400).
  PreparedRequest prepare(ApiRequest request) const;
  // The body of POST /v1/completions or /v1/chat/completions, parsed, checked and prepared.
  PreparedRequest prepare(const std::string& body, bool chat) const;
  // Submits: InputError → 400, QueueFull → 429, ShuttingDown → 503 (ApiError).
  std::shared_ptr<RequestStream> submit(const PreparedRequest& request) const;
  // Waits for the whole completion: the response JSON. ApiError 500 when the generation failed.
  // `alive` is asked while waiting (every 100 ms without an event): false (the client closed its
  // connection) cancels the request and returns nullopt.
  std::optional<Json> complete(const PreparedRequest& request, RequestStream& stream,
                               const std::function<bool()>& alive = {}) const;
  // Streams the completion as server-sent events through `write` (false: the client is gone →
  // the request is cancelled and this returns false), ending with "data: [DONE]". `alive` is
  // asked between events (false: the client is gone).
  bool stream(const PreparedRequest& request, RequestStream& stream, const std::function<bool(const std::string&)>& write,
              const std::function<bool()>& alive = {}) const;

  Json models() const;                        // GET /v1/models
  Json model(const std::string& id) const;    // GET /v1/models/{id} (404 model_not_found for another id)
  Json tokenize(const std::string& body) const;  // POST /tokenize
  Json detokenize(const std::string& body) const;  // POST /detokenize

 private:
  std::string render_chat(const ChatInput& input) const;
  // The grammar of a structured request (response_format, grammar, the calls under tool_choice
  // "required") compiled into p.serve.constraint; 400 naming the field for a bad schema or grammar.
  void constrain(const ApiRequest& api, PreparedRequest& p) const;
  // 400 for more messages than the context has tokens (before rendering them).
  void check_message_count(const ChatInput& input) const;
  void check_model(const std::string& name) const;  // 404 model_not_found unless "" or the served name
  const ServedModel& model_;
  Metrics* metrics_;
};

}  // namespace plexus
