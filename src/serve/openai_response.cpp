// OpenAI response and chunk shapes (serve/openai_response.h).
#include "serve/openai_response.h"

#include <chrono>
#include <random>

namespace plexus {

std::string random_id(std::string_view prefix, int length, std::string_view alphabet) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(prefix);
  for (int i = 0; i < length; ++i) id += alphabet[rng() % alphabet.size()];
  return id;
}

std::string new_completion_id(bool chat) { return random_id(chat ? "chatcmpl-" : "cmpl-", 24, kHexDigits); }

std::int64_t unix_time_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string sse_event(const Json& j) {
  return "data: " + j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

Json usage_json(std::int64_t prompt_tokens, std::int64_t completion_tokens, double time_s, std::optional<double> energy_j) {
  Json u = {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens},
            {"time_s", time_s},
            {"energy_j", nullptr}};
  if (energy_j) u["energy_j"] = *energy_j;
  return u;
}

std::string LogprobsBuilder::piece(std::int32_t id) const {
  const std::int32_t one[1] = {id};
  return tokenizer_.decode(one);
}

void LogprobsBuilder::add(const TokenEvent& token, std::size_t text_offset) {
  ++count_;
  const std::string text = piece(token.id);
  const Json logprob = token.logprob ? Json(*token.logprob) : Json(nullptr);
  if (chat_) {
    auto bytes = [](const std::string& s) {
      Json b = Json::array();
      for (unsigned char c : s) b.push_back(static_cast<int>(c));
      return b;
    };
    Json top = Json::array();
    for (const auto& [id, lp] : token.top) {
      const std::string t = piece(id);
      top.push_back({{"token", t}, {"logprob", lp}, {"bytes", bytes(t)}});
    }
    content_.push_back({{"token", text}, {"logprob", logprob}, {"bytes", bytes(text)}, {"top_logprobs", top}});
    return;
  }
  tokens_.push_back(text);
  token_logprobs_.push_back(logprob);
  Json top = Json::object();
  for (const auto& [id, lp] : token.top) top[piece(id)] = lp;
  top_.push_back(top);
  offsets_.push_back(text_offset);
}

void LogprobsBuilder::add_unscored(std::int32_t id, std::size_t text_offset) {
  ++count_;
  tokens_.push_back(piece(id));
  token_logprobs_.push_back(nullptr);
  top_.push_back(nullptr);
  offsets_.push_back(text_offset);
}

Json join_logprobs(Json a, const Json& b) {
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (const Json& v : b[key]) a[key].push_back(v);
  }
  return a;
}

Json LogprobsBuilder::take() {
  Json j;
  if (chat_) {
    j = {{"content", content_}};
    content_ = Json::array();
  } else {
    j = {{"tokens", tokens_}, {"token_logprobs", token_logprobs_}, {"top_logprobs", top_}, {"text_offset", offsets_}};
    tokens_ = token_logprobs_ = top_ = offsets_ = Json::array();
  }
  count_ = 0;
  return j;
}

namespace {

Json header_json(const ResponseHeader& h, const char* object) {
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

Json reason(const std::string& finish_reason) { return finish_reason.empty() ? Json(nullptr) : Json(finish_reason); }

}  // namespace

Json completion_response(const ResponseHeader& h, const std::vector<ChoiceResult>& choices, const Json& usage) {
  Json j = header_json(h, h.chat ? "chat.completion" : "text_completion");
  j["choices"] = Json::array();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    Json choice = {{"index", i}};
    if (h.chat) {
      const bool calls = c.tool_calls.is_array() && !c.tool_calls.empty();
      choice["message"] = {{"role", "assistant"}, {"content", calls && c.text.empty() ? Json(nullptr) : Json(c.text)}};
      if (calls) choice["message"]["tool_calls"] = c.tool_calls;
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = c.logprobs;
    choice["finish_reason"] = reason(c.finish_reason);
    j["choices"].push_back(choice);
  }
  j["usage"] = usage;
  return j;
}

Json completion_chunk(const ResponseHeader& h, const std::string& text, const std::string& finish_reason,
                      const Json& logprobs, bool role, int index) {
  Json j = header_json(h, h.chat ? "chat.completion.chunk" : "text_completion");
  Json choice = {{"index", index}};
  if (h.chat) {
    Json delta = Json::object();
    if (role) delta["role"] = "assistant";
    if (!text.empty() || role) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = reason(finish_reason);
  j["choices"] = Json::array({choice});
  return j;
}

std::string new_tool_call_id(bool mistral) {
  constexpr std::string_view kAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  return mistral ? random_id("", 9, kAlnum) : random_id("call_", 24, kAlnum);
}

Json tool_call_json(const std::string& id, const std::string& name, const std::string& arguments, int index) {
  Json j = Json::object();
  if (index >= 0) j["index"] = index;
  j["id"] = id;
  j["type"] = "function";
  j["function"] = {{"name", name}, {"arguments", arguments}};
  return j;
}

Json tool_calls_chunk(const ResponseHeader& h, const Json& tool_calls, int index) {
  Json j = header_json(h, "chat.completion.chunk");
  j["choices"] = Json::array({Json{{"index", index}, {"delta", {{"tool_calls", tool_calls}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
  return j;
}

Json usage_chunk(const ResponseHeader& h, const Json& usage) {
  Json j = header_json(h, h.chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = usage;
  return j;
}

const char* api_finish_reason(FinishReason r, bool stop_string_matched) {
  if (stop_string_matched) return "stop";
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "abort";
    case FinishReason::kError: return "error";
  }
  return "stop";
}

}  // namespace plexus
