// The OpenAI-compatible API's requests run against the served model (serve/openai_api.h).
#include "serve/openai_api.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>

#include "serve/api_error.h"
#include "serve/completion_text.h"
#include "serve/openai_response.h"
#include "structured/grammar_parser.h"
#include "structured/json_schema.h"
#include "structured/token_matcher.h"

namespace plexus {

namespace {

constexpr std::chrono::milliseconds kPoll{100};  // how often a waiting handler checks its client

// One choice as its events arrive: its text (stop strings matched), log-probabilities and end.
struct Choice {
  Choice(const Tokenizer& tokenizer, const ApiRequest& api) : text(tokenizer, api.stop) {
    if (api.logprobs >= 0) logprobs = std::make_unique<LogprobsBuilder>(tokenizer, api.chat);
  }
  CompletionText text;
  std::unique_ptr<LogprobsBuilder> logprobs;
  FinishEvent finish;
  bool finished = false, stop_matched = false;
  std::int64_t completion_tokens = 0;
  std::size_t offset_base = 0;  // text_offset of the completion's start: the echoed prompt's length
  Json take_logprobs() { return logprobs && !logprobs->empty() ? logprobs->take() : Json(nullptr); }
  const char* finish_reason() const { return api_finish_reason(finish.reason, stop_matched); }
};

std::vector<Choice> make_choices(const Tokenizer& tokenizer, const ApiRequest& api, std::size_t offset_base) {
  std::vector<Choice> choices;
  choices.reserve(static_cast<std::size_t>(api.n));
  for (int i = 0; i < api.n; ++i) {
    choices.emplace_back(tokenizer, api);
    choices.back().offset_base = offset_base;
  }
  return choices;
}

// The prompt's log-probabilities (completions' echo with logprobs), gathered as the prefill sends
// them: one TokenEvent per position from the second (kept once by position: a follower that
// prefills again after its leader was cancelled sends them again). The first token has no
// context: null logprob and null top_logprobs, as vLLM reports it. text_offset: the running
// length of the prompt's token texts.
class PromptLogprobs {
 public:
  PromptLogprobs(const Tokenizer& tokenizer, const std::vector<std::int32_t>& prompt)
      : builder_(tokenizer, /*chat=*/false), prompt_(prompt), got_(prompt.size()) {}
  void add(const TokenEvent& e) {
    if (e.prompt_position < 1 || static_cast<std::size_t>(e.prompt_position) >= got_.size()) return;
    auto& slot = got_[static_cast<std::size_t>(e.prompt_position)];
    if (!slot) ++count_;
    if (!slot) slot = e;
  }
  bool complete() const { return count_ + 1 == got_.size(); }
  // The prompt's entries in completions' shape (complete() first).
  Json json() {
    std::size_t offset = 0;
    for (std::size_t i = 0; i < prompt_.size(); ++i) {
      if (i == 0) {
        builder_.add_unscored(prompt_[0], offset);
      } else {
        builder_.add(*got_[i], offset);
      }
      offset += builder_.piece(prompt_[i]).size();
    }
    return builder_.take();
  }
  // Where the completion's text_offset starts: the prompt's token texts' length.
  std::size_t end_offset() const {
    std::size_t offset = 0;
    for (std::int32_t id : prompt_) offset += builder_.piece(id).size();
    return offset;
  }

 private:
  LogprobsBuilder builder_;
  const std::vector<std::int32_t>& prompt_;
  std::vector<std::optional<TokenEvent>> got_;  // by position
  std::size_t count_ = 0;
};

// Takes the request's events until every choice has finished. `on_text(index, delta)` with each
// piece of final text of a choice, `on_finish(index)` when it ends (false from either: stop —
// the client is gone or the response failed; the request is cancelled and this returns false).
// `alive` is asked every kPoll (false: the client is gone, the same). `on_prompt` takes the
// prompt's log-probabilities (false: stop, the same).
// A stop string matched in a choice cancels that choice alone.
bool drive(RequestStream& stream, std::vector<Choice>& choices, const std::function<bool(int, const std::string&)>& on_text,
           const std::function<bool(int)>& on_finish, const std::function<bool()>& alive,
           const std::function<bool(const TokenEvent&)>& on_prompt = {}) {
  std::size_t open = choices.size();
  auto asked = std::chrono::steady_clock::now();  // when `alive` was last asked
  while (open > 0) {
    std::optional<RequestStream::Event> ev = stream.next(kPoll);
    // Asked every kPoll, whether events keep coming (a generation under way) or not (queued, prefilling).
    if (alive && std::chrono::steady_clock::now() - asked >= kPoll) {
      asked = std::chrono::steady_clock::now();
      if (!alive()) {
        stream.cancel();
        return false;
      }
    }
    if (!ev) continue;
    if (const TokenEvent* t = std::get_if<TokenEvent>(&*ev)) {
      if (t->prompt_position >= 0) {  // a prompt token's log-probabilities (echo with logprobs)
        if (on_prompt && !on_prompt(*t)) {
          stream.cancel();
          return false;
        }
        continue;
      }
      if (t->index < 0 || static_cast<std::size_t>(t->index) >= choices.size()) continue;
      Choice& c = choices[static_cast<std::size_t>(t->index)];
      if (c.finished || c.text.stopped()) continue;  // tokens of the step that was running when the stop string matched
      ++c.completion_tokens;
      if (c.logprobs) c.logprobs->add(*t, c.offset_base + c.text.decoded());
      const std::string delta = c.text.push(t->id);
      if (c.text.stopped()) {
        c.stop_matched = true;
        stream.cancel_choice(t->index);  // its slot frees at the next step
      }
      if (!delta.empty() && !on_text(t->index, delta)) {
        stream.cancel();
        return false;
      }
      continue;
    }
    const FinishEvent& f = std::get<FinishEvent>(*ev);
    if (f.index < 0 || static_cast<std::size_t>(f.index) >= choices.size()) continue;
    Choice& c = choices[static_cast<std::size_t>(f.index)];
    if (c.finished) continue;
    c.finish = f;
    c.finished = true;
    --open;
    if (!c.stop_matched) c.completion_tokens = f.completion_tokens;
    const std::string rest = c.text.finish();
    if ((!rest.empty() && !on_text(f.index, rest)) || !on_finish(f.index)) {
      stream.cancel();
      return false;
    }
  }
  return true;
}

// What the choices add up to: the usage and the metrics of the request.
struct Totals {
  std::int64_t completion_tokens = 0;
  double time_s = 0, ttft_s = 0;
  std::optional<double> energy_j;
};

Totals totals(const std::vector<Choice>& choices) {
  Totals t;
  bool energy = true;
  double joules = 0;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const Choice& c = choices[i];
    t.completion_tokens += c.completion_tokens;
    t.time_s = std::max(t.time_s, c.finish.time_s);
    t.ttft_s = i == 0 ? c.finish.ttft_s : std::min(t.ttft_s, c.finish.ttft_s);
    energy = energy && c.finish.energy_j.has_value();
    joules += c.finish.energy_j.value_or(0);
  }
  if (energy) t.energy_j = joules;
  return t;
}

bool in_vocab(const std::vector<std::int32_t>& ids, std::int64_t vocab) {
  for (std::int32_t id : ids) {
    if (id < 0 || id >= vocab) return false;
  }
  return true;
}

}  // namespace

namespace {

// A parsed call as the API shows it, with a new id (Mistral's 9-character kind for its format).
Json call_json(ToolCallFormat format, const ToolCall& call, int index = -1) {
  return tool_call_json(new_tool_call_id(format == ToolCallFormat::kMistral), call.name, call.arguments, index);
}

// Under tool_choice "required" (or naming one function): the answer is a JSON list of one call
// or more (one, for a named function), each {"name": one of the tools, "parameters": what that
// function's parameters schema allows} (no schema: any object).
Json tool_calls_schema(const ApiRequest& api) {
  Json calls = Json::array();
  for (const auto& t : api.chat_input.tools) {
    const std::string name = t["function"]["name"].get<std::string>();
    if (api.tool_choice.kind == ToolChoice::Kind::kFunction && name != api.tool_choice.function) continue;
    const auto params = t["function"].find("parameters");
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", name}}},
                                     {"parameters", params != t["function"].end() ? Json(*params) : Json{{"type", "object"}}}}},
                     {"required", {"name", "parameters"}},
                     {"additionalProperties", false}});
  }
  Json schema = {{"type", "array"}, {"minItems", 1}, {"items", calls.size() == 1 ? calls[0] : Json{{"anyOf", calls}}}};
  if (api.tool_choice.kind == ToolChoice::Kind::kFunction) schema["maxItems"] = 1;
  return schema;
}

}  // namespace

void take_tool_calls(ToolCallFormat format, const std::string& echo, ChoiceResult& r) {
  if (format == ToolCallFormat::kNone) return;
  // The generated part (after an echoed prefix) is what may hold calls.
  ParsedOutput parsed = parse_tool_calls(format, std::string_view(r.text).substr(echo.size()));
  if (parsed.calls.empty()) return;
  r.text = echo + parsed.content;
  r.tool_calls = Json::array();
  for (const ToolCall& call : parsed.calls) r.tool_calls.push_back(call_json(format, call));
  r.finish_reason = "tool_calls";
}

void OpenAiApi::check_model(const std::string& name) const {
  if (name.empty() || name == model_.name) return;
  throw ApiError(404, "The model '" + name + "' does not exist: this server serves '" + model_.name + "'",
                 "invalid_request_error", "model", "model_not_found");
}

void OpenAiApi::check_message_count(const ChatInput& input) const {
  if (static_cast<std::int64_t>(input.messages.size()) <= model_.max_model_len) return;
  throw invalid_request("'messages' holds " + std::to_string(input.messages.size()) + " messages: more than the " +
                            std::to_string(model_.max_model_len) + " tokens of this model's context could hold",
                        "messages", "context_length_exceeded");
}

std::string OpenAiApi::render_chat(const ChatInput& input) const {
  if (!model_.chat_template) {
    throw invalid_request("the model '" + model_.name +
                              "' has no chat template (tokenizer_config.json's \"chat_template\"): use /v1/completions, "
                              "or start the server with --chat-template FILE",
                          "messages", "no_chat_template");
  }
  try {
    return model_.chat_template->render(input);
  } catch (const InputError& e) {  // TemplateRaised, TemplateError
    throw invalid_request(std::string("chat template: ") + e.what(), "messages", "chat_template_error");
  }
}

PreparedRequest OpenAiApi::prepare(ApiRequest api) const {
  check_model(api.model);
  PreparedRequest p;
  p.id = new_completion_id(api.chat);
  p.created = unix_time_now();
  ServeRequest& s = p.serve;
  if (api.chat) {
    // tool_choice "none": the tools are not shown to the model. "auto": its answer is parsed for
    // calls in its own format. "required" or a named function: a grammar makes it write a JSON
    // list of calls (tool_call_grammar), whatever its format.
    if (api.tool_choice.kind == ToolChoice::Kind::kNone) {
      api.chat_input.tools = nullptr;
    } else if (api.tool_choice.kind == ToolChoice::Kind::kAuto) {
      p.tool_format = model_.tool_format;
    } else {
      p.tool_format = ToolCallFormat::kJsonList;
    }
    check_message_count(api.chat_input);
    s.prompt = model_.tokenizer->encode(render_chat(api.chat_input), /*add_special_tokens=*/false);
    if (s.prompt.empty()) throw invalid_request("the chat template rendered an empty prompt", "messages");
  } else if (api.prompt_text) {
    s.prompt = model_.tokenizer->encode(*api.prompt_text, /*add_special_tokens=*/true);
  } else {
    s.prompt = api.prompt_ids;
    if (!in_vocab(s.prompt, model_.vocab_size)) {
      throw invalid_request("'prompt': token ids must be below the vocabulary size " + std::to_string(model_.vocab_size), "prompt");
    }
  }
  const auto prompt_len = static_cast<std::int64_t>(s.prompt.size());
  if (prompt_len >= model_.max_model_len) {
    throw invalid_request("This model's maximum context length is " + std::to_string(model_.max_model_len) +
                              " tokens, but the prompt has " + std::to_string(prompt_len) + " tokens",
                          api.chat ? "messages" : "prompt", "context_length_exceeded");
  }
  s.max_tokens = api.max_tokens.value_or(model_.max_model_len - prompt_len);
  if (prompt_len + s.max_tokens > model_.max_model_len) {
    throw invalid_request("This model's maximum context length is " + std::to_string(model_.max_model_len) +
                              " tokens, but " + std::to_string(prompt_len + s.max_tokens) + " were requested (" +
                              std::to_string(prompt_len) + " in the prompt, " + std::to_string(s.max_tokens) +
                              " for the completion): lower max_tokens or shorten the prompt",
                          "max_tokens", "context_length_exceeded");
  }
  if (api.n > model_.max_choices) {
    throw invalid_request("'n' must be between 1 and " + std::to_string(model_.max_choices) +
                              " on this server (the choices run together, at most --max-sequences of them), got " +
                              std::to_string(api.n),
                          "n");
  }
  for (const auto& [id, bias] : api.sampling.logit_bias) {
    if (id >= model_.vocab_size) {
      throw invalid_request("'logit_bias': token id " + std::to_string(id) + " is outside the vocabulary of " +
                                std::to_string(model_.vocab_size) + " ids",
                            "logit_bias");
    }
  }
  for (std::int64_t id : api.stop_token_ids) {
    if (id >= model_.vocab_size) {
      throw invalid_request("'stop_token_ids': token id " + std::to_string(id) + " is outside the vocabulary of " +
                                std::to_string(model_.vocab_size) + " ids",
                            "stop_token_ids");
    }
  }
  s.sampling = api.sampling;
  if (!s.sampling.greedy && !api.seed_given) s.sampling.seed = std::random_device{}();
  if (!api.ignore_eos) s.stop_ids = model_.eos_ids;
  s.stop_ids.insert(s.stop_ids.end(), api.stop_token_ids.begin(), api.stop_token_ids.end());
  s.top_logprobs = api.logprobs;
  if (api.echo && !api.chat && api.logprobs >= 0) s.prompt_logprobs = api.logprobs;  // the echoed prompt's too
  s.choices = api.n;
  if (api.echo) {
    if (!api.chat) {
      p.echo = api.prompt_text ? *api.prompt_text : model_.tokenizer->decode(api.prompt_ids);
    } else if (const auto& last = api.chat_input.messages.back(); last.value("role", "") == "assistant" &&
                                                                     last.contains("content") && last["content"].is_string()) {
      p.echo = last["content"].get<std::string>();  // as vLLM: the last message, when the assistant's
    }
  }
  constrain(api, p);
  p.api = std::move(api);
  return p;
}

void OpenAiApi::constrain(const ApiRequest& api, PreparedRequest& p) const {
  const bool calls = p.tool_format == ToolCallFormat::kJsonList;
  if (api.format.kind == OutputFormat::Kind::kText && !calls) return;
  const char* field = calls ? "tool_choice" : api.format.kind == OutputFormat::Kind::kGrammar ? "grammar" : "response_format";
  if (calls && api.format.kind != OutputFormat::Kind::kText) {
    throw invalid_request("'tool_choice' \"required\" or a named function writes the calls with a grammar: leave out "
                          "'response_format' and 'grammar'",
                          "tool_choice");
  }
  if (api.ignore_eos) {
    throw invalid_request(std::string("'ignore_eos' with '") + field + "': a structured answer ends where its grammar does",
                          "ignore_eos");
  }
  if (model_.compile_grammars && (!model_.vocabulary || !model_.grammars)) {
    throw invalid_request(std::string("'") + field + "': structured output is not available on this server", field);
  }
  std::string text, source;
  try {
    switch (api.format.kind) {
      case OutputFormat::Kind::kText:
        text = structured::json_schema_grammar(tool_calls_schema(api), "tools");
        source = "the tools' calls";
        break;
      case OutputFormat::Kind::kJsonObject:
        text = structured::json_object_grammar();
        source = "response_format json_object";
        break;
      case OutputFormat::Kind::kJsonSchema:
        text = structured::json_schema_grammar(api.format.schema, "response_format.json_schema.schema");
        source = "response_format.json_schema.schema (as a grammar)";
        break;
      case OutputFormat::Kind::kGrammar:
        text = api.format.grammar;
        source = "grammar";
        break;
    }
    p.grammar = text;
    p.grammar_source = source;
    if (!model_.compile_grammars) {
      (void)structured::parse_grammar(text, source);  // its errors now, as a request's 400
      return;
    }
    std::shared_ptr<const structured::CompiledGrammar> g = model_.grammars->get(text, model_.vocabulary, source);
    p.serve.constraint = [g] { return std::make_unique<structured::TokenMatcher>(g); };
  } catch (const InputError& e) {
    throw invalid_request(e.what(), calls ? "tools" : field);
  }
}

PreparedRequest OpenAiApi::prepare(const std::string& text, bool chat) const {
  const Json body = parse_body(text, max_body_values(model_.max_model_len));
  ApiRequest r = chat ? parse_chat_request(body) : parse_completion_request(body);
  if (chat) keep_key_order(r.chat_input, text);
  return prepare(std::move(r));
}

std::shared_ptr<RequestStream> OpenAiApi::submit(const PreparedRequest& request) const {
  try {
    return model_.submit(request.serve);
  } catch (const QueueFull& e) {
    throw ApiError(429, e.what(), "rate_limit_error", "", "queue_full");
  } catch (const ShuttingDown& e) {
    throw ApiError(503, e.what(), "service_unavailable", "", "shutting_down");
  } catch (const InputError& e) {
    throw invalid_request(e.what());
  }
}

std::optional<Json> OpenAiApi::complete(const PreparedRequest& request, RequestStream& stream,
                                        const std::function<bool()>& alive) const {
  const ResponseHeader h{request.id, request.created, model_.name, request.api.chat};
  PromptLogprobs prompt_lp(*model_.tokenizer, request.serve.prompt);
  const bool scored = request.serve.prompt_logprobs >= 0;
  std::vector<Choice> choices = make_choices(*model_.tokenizer, request.api, scored ? prompt_lp.end_offset() : 0);
  std::vector<std::string> out(choices.size(), request.echo);
  const Choice* failed = nullptr;
  const bool finished = drive(stream, choices, [&](int i, const std::string& d) {
    out[static_cast<std::size_t>(i)] += d;
    return true;
  }, [&](int i) {
    const Choice& c = choices[static_cast<std::size_t>(i)];
    if (c.finish.reason == FinishReason::kError) failed = &c;
    return failed == nullptr;
  }, alive, [&](const TokenEvent& e) {
    prompt_lp.add(e);
    return true;
  });
  if (!finished && !failed) return std::nullopt;  // the client is gone: drive cancelled the request
  if (failed) throw ApiError(500, "generation failed: " + failed->finish.error, "server_error");
  const Totals t = totals(choices);
  const auto prompt_tokens = static_cast<std::int64_t>(request.serve.prompt.size());
  if (metrics_) metrics_->record_generation(prompt_tokens, t.completion_tokens, t.ttft_s, t.time_s);
  if (scored && !prompt_lp.complete()) {
    throw ApiError(500, "internal: the prompt's log-probabilities did not all arrive", "server_error");
  }
  const Json echoed = scored ? prompt_lp.json() : Json(nullptr);
  std::vector<ChoiceResult> results;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    Choice& c = choices[i];
    Json logprobs = c.logprobs ? c.logprobs->take() : Json(nullptr);
    if (scored) logprobs = join_logprobs(echoed, logprobs);
    ChoiceResult r{out[i], c.finish_reason(), std::move(logprobs), nullptr};
    take_tool_calls(request.tool_format, request.echo, r);
    results.push_back(std::move(r));
  }
  return completion_response(h, results, usage_json(prompt_tokens, t.completion_tokens, t.time_s, t.energy_j));
}

bool OpenAiApi::stream(const PreparedRequest& request, RequestStream& stream,
                       const std::function<bool(const std::string&)>& write, const std::function<bool()>& alive) const {
  const ResponseHeader h{request.id, request.created, model_.name, request.api.chat};
  PromptLogprobs prompt_lp(*model_.tokenizer, request.serve.prompt);
  const bool scored = request.serve.prompt_logprobs >= 0;
  std::vector<Choice> choices = make_choices(*model_.tokenizer, request.api, scored ? prompt_lp.end_offset() : 0);
  // The echo chunk of every choice: with the prompt's log-probabilities once they are all in.
  auto echo = [&] {
    const Json logprobs = scored ? prompt_lp.json() : Json(nullptr);
    for (int i = 0; i < static_cast<int>(choices.size()); ++i) {
      if (!write(sse_event(completion_chunk(h, request.echo, "", logprobs, false, i)))) return false;
    }
    return true;
  };
  bool ok = true;
  for (int i = 0; ok && h.chat && i < static_cast<int>(choices.size()); ++i) {
    ok = write(sse_event(completion_chunk(h, "", "", nullptr, /*role=*/true, i)));
  }
  bool echo_pending = !request.echo.empty() || scored;
  if (ok && echo_pending && (!scored || prompt_lp.complete())) {
    ok = echo();
    echo_pending = false;
  }
  if (!ok) {
    stream.cancel();
    return false;
  }
  // With tools: each choice's text goes through its ToolCallStream; calls go out as tool_calls deltas.
  std::vector<ToolCallStream> tool_streams(request.tool_format == ToolCallFormat::kNone ? 0 : choices.size(),
                                           ToolCallStream(request.tool_format));
  std::vector<int> calls_sent(choices.size(), 0);
  auto send = [&](int i, const ParsedOutput& o) {
    if (!o.content.empty() &&
        !write(sse_event(completion_chunk(h, o.content, "", choices[static_cast<std::size_t>(i)].take_logprobs(), false, i)))) {
      return false;
    }
    if (o.calls.empty()) return true;
    Json calls = Json::array();
    for (const ToolCall& call : o.calls) {
      calls.push_back(call_json(request.tool_format, call, calls_sent[static_cast<std::size_t>(i)]++));
    }
    return write(sse_event(tool_calls_chunk(h, calls, i)));
  };
  bool written = true, failed = false;
  const bool finished = drive(stream, choices, [&](int i, const std::string& d) {
    if (!tool_streams.empty()) {
      written = send(i, tool_streams[static_cast<std::size_t>(i)].feed(d));
      return written;
    }
    written = write(sse_event(completion_chunk(h, d, "", choices[static_cast<std::size_t>(i)].take_logprobs(), false, i)));
    return written;
  }, [&](int i) {
    Choice& c = choices[static_cast<std::size_t>(i)];
    if (c.finish.reason == FinishReason::kError) {
      failed = true;
      const ApiError e(500, "generation failed: " + c.finish.error, "server_error");
      written = write(sse_event(error_json(e))) && write(kSseDone);
      return false;
    }
    if (!tool_streams.empty() && !send(i, tool_streams[static_cast<std::size_t>(i)].finish())) return written = false;
    const bool called = !tool_streams.empty() && calls_sent[static_cast<std::size_t>(i)] > 0;
    written = write(sse_event(completion_chunk(h, "", called ? "tool_calls" : c.finish_reason(), c.take_logprobs(), false, i)));
    return written;
  }, alive, [&](const TokenEvent& e) {
    prompt_lp.add(e);
    if (!echo_pending || !prompt_lp.complete()) return true;
    echo_pending = false;
    written = echo();
    return written;
  });
  if (failed) return written;
  if (!finished) return false;
  const Totals t = totals(choices);
  const auto prompt_tokens = static_cast<std::int64_t>(request.serve.prompt.size());
  if (metrics_) metrics_->record_generation(prompt_tokens, t.completion_tokens, t.ttft_s, t.time_s);
  if (request.api.include_usage) {
    const Json usage = usage_json(prompt_tokens, t.completion_tokens, t.time_s, t.energy_j);
    if (!write(sse_event(usage_chunk(h, usage)))) return false;
  }
  return write(kSseDone);
}

Json OpenAiApi::model(const std::string& id) const {
  check_model(id);  // the route gives a non-empty id
  return {{"id", model_.name},
          {"object", "model"},
          {"created", model_.created},
          {"owned_by", "plexus"},
          {"max_model_len", model_.max_model_len}};
}

Json OpenAiApi::models() const { return {{"object", "list"}, {"data", Json::array({model(model_.name)})}}; }

Json OpenAiApi::tokenize(const std::string& text) const {
  const Json body = parse_body(text, max_body_values(model_.max_model_len));
  TokenizeRequest r = parse_tokenize_request(body);
  if (r.chat) {
    check_message_count(*r.chat);
    keep_key_order(*r.chat, text);
  }
  if (body.contains("model") && body["model"].is_string()) check_model(body["model"].get<std::string>());
  const std::string prompt = r.prompt ? *r.prompt : render_chat(*r.chat);
  const std::vector<std::int32_t> ids = model_.tokenizer->encode(prompt, r.add_special_tokens);
  return {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", model_.max_model_len}};
}

Json OpenAiApi::detokenize(const std::string& text) const {
  const std::vector<std::int32_t> ids = parse_detokenize_request(parse_body(text, max_body_values(model_.max_model_len)));
  if (!in_vocab(ids, model_.vocab_size)) {
    throw invalid_request("'tokens': token ids must be below the vocabulary size " + std::to_string(model_.vocab_size), "tokens");
  }
  return {{"prompt", model_.tokenizer->decode(ids)}};
}

}  // namespace plexus
