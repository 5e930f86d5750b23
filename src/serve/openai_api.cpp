// The OpenAI-compatible API's requests run against the served model (serve/openai_api.h).
#include "serve/openai_api.h"

#include <chrono>
#include <random>

#include "serve/api_error.h"
#include "serve/completion_text.h"
#include "serve/openai_response.h"

namespace plexus {

namespace {

constexpr std::chrono::milliseconds kPoll{100};  // how often a waiting handler checks its client

// What came of a generation.
struct Outcome {
  FinishEvent finish;
  bool stop_matched = false;
  std::int64_t completion_tokens = 0;
  bool client_gone = false;
};

// Takes the request's events to the end. `on_text(delta)` with each piece of final text (false:
// the client is gone, the request is cancelled); `logprobs` gathers the tokens' log-probabilities.
Outcome drive(RequestStream& stream, CompletionText& text, LogprobsBuilder* logprobs,
              const std::function<bool(const std::string&)>& on_text, const std::function<bool()>& alive) {
  Outcome out;
  for (;;) {
    std::optional<RequestStream::Event> ev = stream.next(kPoll);
    if (!ev) {
      if (alive && !alive()) {
        stream.cancel();
        out.client_gone = true;
        return out;
      }
      continue;
    }
    if (const TokenEvent* t = std::get_if<TokenEvent>(&*ev)) {
      if (text.stopped()) continue;  // tokens of the step that was running when the stop string matched
      ++out.completion_tokens;
      if (logprobs) logprobs->add(*t, text.decoded());
      const std::string delta = text.push(t->id);
      if (text.stopped()) {
        out.stop_matched = true;
        stream.cancel();  // the slot frees at the next step
      }
      if (!delta.empty() && !on_text(delta)) {
        stream.cancel();
        out.client_gone = true;
        return out;
      }
      continue;
    }
    out.finish = std::get<FinishEvent>(*ev);
    if (!out.stop_matched) out.completion_tokens = out.finish.completion_tokens;
    const std::string rest = text.finish();
    if (!rest.empty() && !on_text(rest)) out.client_gone = true;
    return out;
  }
}

bool in_vocab(const std::vector<std::int32_t>& ids, std::int64_t vocab) {
  for (std::int32_t id : ids) {
    if (id < 0 || id >= vocab) return false;
  }
  return true;
}

}  // namespace

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
  s.sampling = api.sampling;
  if (!s.sampling.greedy && !api.seed_given) s.sampling.seed = std::random_device{}();
  if (!api.ignore_eos) s.stop_ids = model_.eos_ids;
  s.top_logprobs = api.logprobs;
  p.api = std::move(api);
  return p;
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

Json OpenAiApi::complete(const PreparedRequest& request, RequestStream& stream) const {
  const ResponseHeader h{request.id, request.created, model_.name, request.api.chat};
  CompletionText text(*model_.tokenizer, request.api.stop);
  std::unique_ptr<LogprobsBuilder> logprobs;
  if (request.api.logprobs >= 0) logprobs = std::make_unique<LogprobsBuilder>(*model_.tokenizer, request.api.chat);
  std::string out;
  const Outcome o = drive(stream, text, logprobs.get(), [&](const std::string& d) {
    out += d;
    return true;
  }, {});
  const FinishEvent& f = o.finish;
  if (f.reason == FinishReason::kError) throw ApiError(500, "generation failed: " + f.error, "server_error");
  if (metrics_) metrics_->record_generation(f.prompt_tokens, o.completion_tokens, f.ttft_s, f.time_s);
  const Json usage = usage_json(static_cast<std::int64_t>(request.serve.prompt.size()), o.completion_tokens, f.time_s, f.energy_j);
  return completion_response(h, out, api_finish_reason(f.reason, o.stop_matched), logprobs ? logprobs->take() : Json(nullptr),
                             usage);
}

bool OpenAiApi::stream(const PreparedRequest& request, RequestStream& stream,
                       const std::function<bool(const std::string&)>& write, const std::function<bool()>& alive) const {
  const ResponseHeader h{request.id, request.created, model_.name, request.api.chat};
  CompletionText text(*model_.tokenizer, request.api.stop);
  std::unique_ptr<LogprobsBuilder> logprobs;
  if (request.api.logprobs >= 0) logprobs = std::make_unique<LogprobsBuilder>(*model_.tokenizer, request.api.chat);
  auto take_logprobs = [&] { return logprobs && !logprobs->empty() ? logprobs->take() : Json(nullptr); };
  if (h.chat && !write(sse_event(completion_chunk(h, "", "", nullptr, /*role=*/true)))) {
    stream.cancel();
    return false;
  }
  const Outcome o = drive(stream, text, logprobs.get(), [&](const std::string& d) {
    return write(sse_event(completion_chunk(h, d, "", take_logprobs())));
  }, alive);
  if (o.client_gone) return false;
  const FinishEvent& f = o.finish;
  if (f.reason == FinishReason::kError) {
    const ApiError e(500, "generation failed: " + f.error, "server_error");
    return write(sse_event(error_json(e))) && write(kSseDone);
  }
  if (metrics_) metrics_->record_generation(f.prompt_tokens, o.completion_tokens, f.ttft_s, f.time_s);
  if (!write(sse_event(completion_chunk(h, "", api_finish_reason(f.reason, o.stop_matched), take_logprobs())))) return false;
  if (request.api.include_usage) {
    const Json usage = usage_json(static_cast<std::int64_t>(request.serve.prompt.size()), o.completion_tokens, f.time_s, f.energy_j);
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
