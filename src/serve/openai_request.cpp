// Parsing and checking of OpenAI API request bodies (serve/openai_request.h).
#include "serve/openai_request.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "serve/api_error.h"

namespace plexus {

namespace {

std::string shown(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string plain(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number_in(const Json& body, const char* name, double lo, double hi, bool lo_open = false) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  const std::string range = std::string(lo_open ? "greater than " : "between ") + plain(lo) +
                            (lo_open ? " and at most " : " and ") + plain(hi);
  if (!v->is_number()) throw invalid_request(std::string("'") + name + "' must be a number " + range + ", got " + shown(*v), name);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo)) {
    throw invalid_request(std::string("'") + name + "' must be " + range + ", got " + shown(*v), name);
  }
  return x;
}

std::optional<long long> integer_in(const Json& body, const char* name, long long lo, long long hi) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  const std::string range = "an integer between " + std::to_string(lo) + " and " + std::to_string(hi);
  if (v->is_number_unsigned()) {
    const auto u = v->get<unsigned long long>();
    if (u > static_cast<unsigned long long>(hi) || (lo > 0 && u < static_cast<unsigned long long>(lo))) {
      throw invalid_request(std::string("'") + name + "' must be " + range + ", got " + shown(*v), name);
    }
    return static_cast<long long>(u);
  }
  if (!v->is_number_integer()) throw invalid_request(std::string("'") + name + "' must be " + range + ", got " + shown(*v), name);
  const auto x = v->get<long long>();
  if (x < lo || x > hi) throw invalid_request(std::string("'") + name + "' must be " + range + ", got " + shown(*v), name);
  return x;
}

std::optional<bool> boolean(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw invalid_request(std::string("'") + name + "' must be true or false, got " + shown(*v), name);
  return v->get<bool>();
}

std::optional<std::string> string_field(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw invalid_request(std::string("'") + name + "' must be a string, got " + shown(*v), name);
  return v->get<std::string>();
}

std::vector<std::int32_t> token_ids(const Json& list, const std::string& name) {
  std::vector<std::int32_t> ids;
  ids.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Json& v = list[i];
    const bool ok = (v.is_number_unsigned() && v.get<unsigned long long>() <= std::numeric_limits<std::int32_t>::max()) ||
                    (v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() <= std::numeric_limits<std::int32_t>::max());
    if (!ok) {
      throw invalid_request("'" + name + "[" + std::to_string(i) + "]' must be a token id (an integer from 0), got " + shown(v), name);
    }
    ids.push_back(static_cast<std::int32_t>(v.get<long long>()));
  }
  return ids;
}

// Values in a JSON text, counted from its structure without parsing: one, plus one per '[', '{'
// and ',' outside strings (an upper bound for valid JSON).
std::size_t count_json_values(std::string_view text) {
  std::size_t n = 1;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{' || c == ',') {
      ++n;
    }
  }
  return n;
}

// {"token id": bias, ...}: keys decimal token ids, values numbers in [-100, 100].
std::vector<std::pair<std::int32_t, float>> logit_bias(const Json& body) {
  const Json* v = field(body, "logit_bias");
  std::vector<std::pair<std::int32_t, float>> out;
  if (!v) return out;
  if (!v->is_object()) {
    throw invalid_request("'logit_bias' must be an object mapping token ids to biases, got " + shown(*v), "logit_bias");
  }
  for (const auto& [key, bias] : v->items()) {
    const bool digits = !key.empty() && key.size() <= 10 && std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long long id = digits ? std::stoll(key) : -1;
    if (!digits || id > std::numeric_limits<std::int32_t>::max()) {
      throw invalid_request("'logit_bias' keys must be token ids (decimal integers from 0), got \"" + key.substr(0, 40) + "\"",
                            "logit_bias");
    }
    if (!bias.is_number() || !(bias.get<double>() >= -kMaxLogitBias && bias.get<double>() <= kMaxLogitBias)) {
      throw invalid_request("'logit_bias' values must be numbers between -100 and 100, got " + shown(bias) + " for token " + key,
                            "logit_bias");
    }
    out.emplace_back(static_cast<std::int32_t>(id), static_cast<float>(bias.get<double>()));
  }
  return out;
}

void check_unsupported(const Json& body) {
  if (string_field(body, "suffix")) {
    throw invalid_request("'suffix' (fill-in-the-middle) is not supported: plexus has no fill-in-the-middle template for "
                          "any model; put the text before the insertion point in 'prompt'",
                          "suffix");
  }
}

// "response_format" and "grammar" (at most one of them asks for structure).
OutputFormat output_format(const Json& body) {
  OutputFormat f;
  if (const Json* rf = field(body, "response_format")) {
    const std::string shapes = "{\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": {\"name\", \"schema\"}}";
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
      throw invalid_request("'response_format' must be " + shapes + ", got " + shown(*rf), "response_format");
    }
    const std::string type = (*rf)["type"].get<std::string>();
    if (type == "json_object") {
      f.kind = OutputFormat::Kind::kJsonObject;
    } else if (type == "json_schema") {
      const auto js = rf->find("json_schema");
      if (js == rf->end() || !js->is_object() || !js->contains("schema") || !((*js)["schema"].is_object() || (*js)["schema"].is_boolean())) {
        throw invalid_request("'response_format.json_schema' must be an object with a \"schema\" (a JSON Schema), got " +
                                  (js == rf->end() ? std::string("nothing") : shown(*js)),
                              "response_format");
      }
      f.kind = OutputFormat::Kind::kJsonSchema;
      f.schema = (*js)["schema"];
    } else if (type != "text") {
      throw invalid_request("'response_format' must be " + shapes + ", got type '" + type + "'", "response_format");
    }
  }
  if (const Json* g = field(body, "grammar")) {
    if (!g->is_string() || g->get<std::string>().empty()) {
      throw invalid_request("'grammar' must be the text of a grammar (docs/structured_output.md), got " + shown(*g), "grammar");
    }
    if (f.kind != OutputFormat::Kind::kText) {
      throw invalid_request("give one of 'grammar' and a structured 'response_format', not both", "grammar");
    }
    f.kind = OutputFormat::Kind::kGrammar;
    f.grammar = g->get<std::string>();
  }
  return f;
}

// The fields both endpoints share.
void parse_common(const Json& body, ApiRequest& r) {
  if (!body.is_object()) throw invalid_request("the request body must be a JSON object");
  check_unsupported(body);
  r.model = string_field(body, "model").value_or("");
  r.format = output_format(body);
  r.n = static_cast<int>(integer_in(body, "n", 1, kMaxChoices).value_or(1));
  if (const Json* b = field(body, "best_of"); b && !(b->is_number_integer() && b->get<long long>() == r.n)) {
    throw invalid_request("'best_of' must equal 'n' (" + std::to_string(r.n) + ") when given: plexus returns every choice it makes, got " +
                              shown(*b), "best_of");
  }
  const std::optional<double> temperature = number_in(body, "temperature", 0, kMaxTemperature);
  set_temperature(r.sampling, temperature.value_or(1.0));  // below 1e-5 (0 included): greedy
  r.sampling.top_p = number_in(body, "top_p", 0, 1, /*lo_open=*/true).value_or(1.0);
  r.sampling.min_p = number_in(body, "min_p", 0, 1).value_or(0.0);
  r.sampling.presence_penalty = number_in(body, "presence_penalty", -kMaxPenalty, kMaxPenalty).value_or(0.0);
  r.sampling.frequency_penalty = number_in(body, "frequency_penalty", -kMaxPenalty, kMaxPenalty).value_or(0.0);
  if (const Json* p = field(body, "repetition_penalty")) {
    if (!p->is_number() || !(p->get<double>() > 0)) {
      throw invalid_request("'repetition_penalty' must be a number greater than 0 (1: off), got " + shown(*p), "repetition_penalty");
    }
    r.sampling.repetition_penalty = p->get<double>();
  }
  r.sampling.logit_bias = logit_bias(body);
  if (const Json* s = field(body, "stop_token_ids")) {
    if (!s->is_array()) throw invalid_request("'stop_token_ids' must be a list of token ids, got " + shown(*s), "stop_token_ids");
    for (std::int32_t id : token_ids(*s, "stop_token_ids")) r.stop_token_ids.push_back(id);
  }
  r.echo = boolean(body, "echo").value_or(false);
  if (const Json* k = field(body, "top_k"); k && k->is_number_integer() && k->get<long long>() == -1) {
    r.sampling.top_k = 0;  // vLLM's "no limit"
  } else {
    r.sampling.top_k = integer_in(body, "top_k", 0, kMaxTopK).value_or(0);
  }
  if (const Json* s = field(body, "seed")) {
    if (s->is_number_unsigned()) {
      r.sampling.seed = s->get<std::uint64_t>();
    } else if (s->is_number_integer()) {
      r.sampling.seed = static_cast<std::uint64_t>(s->get<std::int64_t>());
    } else {
      throw invalid_request("'seed' must be an integer, got " + shown(*s), "seed");
    }
    r.seed_given = true;
  }
  if (const Json* s = field(body, "stop")) {
    if (s->is_string()) {
      r.stop.push_back(s->get<std::string>());
    } else if (s->is_array() && s->size() <= kMaxStopStrings) {
      for (const Json& x : *s) {
        if (!x.is_string()) throw invalid_request("'stop' must be a string or a list of strings, got " + shown(*s), "stop");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      throw invalid_request("'stop' must be a string or a list of up to " + std::to_string(kMaxStopStrings) +
                                " strings, got " + shown(*s), "stop");
    }
    for (const std::string& x : r.stop) {
      if (x.empty()) throw invalid_request("'stop' strings must not be empty", "stop");
    }
  }
  r.stream = boolean(body, "stream").value_or(false);
  if (const Json* o = field(body, "stream_options")) {
    if (!o->is_object()) throw invalid_request("'stream_options' must be an object, got " + shown(*o), "stream_options");
    if (!r.stream) throw invalid_request("'stream_options' is only allowed with \"stream\": true", "stream_options");
    r.include_usage = boolean(*o, "include_usage").value_or(false);
  }
  r.ignore_eos = boolean(body, "ignore_eos").value_or(false);
}

// max_tokens (and chat's max_completion_tokens).
std::optional<std::int64_t> max_tokens(const Json& body, const char* name) {
  return integer_in(body, name, 1, kMaxNewTokens);
}

Json object_field(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return Json::object();
  if (!v->is_object()) throw invalid_request(std::string("'") + name + "' must be an object, got " + shown(*v), name);
  return *v;
}

// A content given as a list of text parts becomes their texts joined by newlines (as vLLM does),
// the string the models' templates expect.
void join_text_parts(nlohmann::ordered_json& messages) {
  for (auto& msg : messages) {
    auto content = msg.find("content");
    if (content == msg.end() || !content->is_array()) continue;
    std::string text;
    for (std::size_t i = 0; i < content->size(); ++i) text += (i ? "\n" : "") + (*content)[i]["text"].get<std::string>();
    *content = text;
  }
}

ChatInput chat_input(const Json& body) {
  ChatInput in;
  const Json* m = field(body, "messages");
  if (!m) throw invalid_request("'messages' is required: a list of {\"role\", \"content\"}", "messages");
  if (!m->is_array() || m->empty()) throw invalid_request("'messages' must be a non-empty list, got " + shown(*m), "messages");
  for (std::size_t i = 0; i < m->size(); ++i) {
    const Json& msg = (*m)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) throw invalid_request("'" + where + "' must be an object, got " + shown(msg), "messages");
    auto role = msg.find("role");
    if (role == msg.end() || !role->is_string()) {
      throw invalid_request("'" + where + ".role' must be a string (system, user, assistant, tool)", "messages");
    }
    auto content = msg.find("content");
    if (content != msg.end() && !content->is_null() && !content->is_string() && !content->is_array()) {
      throw invalid_request("'" + where + ".content' must be a string or a list of parts, got " + shown(*content), "messages");
    }
    if (content != msg.end() && content->is_array()) {
      for (const Json& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
          throw invalid_request("'" + where + ".content': only text parts ({\"type\": \"text\", \"text\": ...}) are supported, got " +
                                    shown(part), "messages");
        }
      }
    }
  }
  in.messages = *m;
  join_text_parts(in.messages);
  if (const Json* t = field(body, "tools")) {
    if (!t->is_array()) throw invalid_request("'tools' must be a list, got " + shown(*t), "tools");
    for (std::size_t i = 0; i < t->size(); ++i) {
      const Json& tool = (*t)[i];
      const std::string where = "'tools[" + std::to_string(i) + "]'";
      if (!tool.is_object() || tool.value("type", "") != "function" || !tool.contains("function") || !tool["function"].is_object()) {
        throw invalid_request(where + " must be {\"type\": \"function\", \"function\": {\"name\", \"parameters\"}}, got " + shown(tool),
                              "tools");
      }
      const Json& f = tool["function"];
      if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().empty()) {
        throw invalid_request(where + ".function.name must be a non-empty string", "tools");
      }
      if (f.contains("parameters") && !f["parameters"].is_object()) {
        throw invalid_request(where + ".function.parameters must be a JSON Schema object, got " + shown(f["parameters"]), "tools");
      }
    }
    in.tools = *t;
  }
  in.add_generation_prompt = boolean(body, "add_generation_prompt").value_or(true);
  in.kwargs = object_field(body, "chat_template_kwargs");
  return in;
}

// "tool_choice": "none", "auto", "required" or {"type": "function", "function": {"name"}} naming
// one of `tools` (null when none were given).
ToolChoice tool_choice(const Json& body, const nlohmann::ordered_json& tools) {
  ToolChoice c;
  const bool any = tools.is_array() && !tools.empty();
  c.kind = any ? ToolChoice::Kind::kAuto : ToolChoice::Kind::kNone;
  const Json* v = field(body, "tool_choice");
  if (!v) return c;
  const std::string allowed = "\"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}";
  if (v->is_string()) {
    const std::string k = v->get<std::string>();
    if (k == "none") c.kind = ToolChoice::Kind::kNone;
    else if (k == "auto") c.kind = ToolChoice::Kind::kAuto;
    else if (k == "required") c.kind = ToolChoice::Kind::kRequired;
    else throw invalid_request("'tool_choice' must be " + allowed + ", got " + shown(*v), "tool_choice");
  } else if (v->is_object() && v->value("type", "") == "function" && v->contains("function") && (*v)["function"].is_object() &&
             (*v)["function"].contains("name") && (*v)["function"]["name"].is_string()) {
    c.kind = ToolChoice::Kind::kFunction;
    c.function = (*v)["function"]["name"].get<std::string>();
  } else {
    throw invalid_request("'tool_choice' must be " + allowed + ", got " + shown(*v), "tool_choice");
  }
  if (c.kind == ToolChoice::Kind::kNone) return c;
  if (!any) {
    throw invalid_request("'tool_choice' " + shown(*v) + " needs 'tools': give the functions the model may call", "tool_choice");
  }
  if (c.kind == ToolChoice::Kind::kFunction) {
    bool found = false;
    for (const auto& t : tools) found = found || t["function"]["name"].get<std::string>() == c.function;
    if (!found) throw invalid_request("'tool_choice' names the function '" + c.function + "', which is not among 'tools'", "tool_choice");
  }
  return c;
}

}  // namespace

std::size_t max_body_values(std::int64_t context) {
  return static_cast<std::size_t>(std::max<std::int64_t>(context, 0)) * 4 + 16384;
}

Json parse_body(const std::string& body, std::size_t max_values) {
  try {
    check_json_depth(body, "request body");
  } catch (const InputError& e) {
    throw invalid_request(e.what());
  }
  if (const std::size_t values = count_json_values(body); values > max_values) {
    throw invalid_request("the request body holds " + std::to_string(values) +
                              " JSON values (counting every element of its lists and objects); this server reads at most " +
                              std::to_string(max_values) + " (4 per token of its context, and 16384)",
                          "", "too_many_values");
  }
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& e) {
    throw invalid_request(std::string("malformed JSON in the request body: ") + e.what(), "", "invalid_json");
  }
  if (!j.is_object()) throw invalid_request("the request body must be a JSON object, got " + shown(j));
  return j;
}

void keep_key_order(ChatInput& input, const std::string& body) {
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  if (auto m = j.find("messages"); m != j.end() && m->is_array()) {
    input.messages = *m;
    join_text_parts(input.messages);
  }
  if (auto t = j.find("tools"); t != j.end() && t->is_array()) input.tools = *t;
  if (auto k = j.find("chat_template_kwargs"); k != j.end() && k->is_object()) input.kwargs = *k;
}

ApiRequest parse_completion_request(const Json& body) {
  ApiRequest r;
  parse_common(body, r);
  const Json* p = field(body, "prompt");
  if (!p) throw invalid_request("'prompt' is required: a string or a list of token ids", "prompt");
  Json one = *p;
  if (one.is_array() && one.size() == 1 && (one[0].is_string() || one[0].is_array())) one = Json(one[0]);
  if (one.is_string()) {
    r.prompt_text = one.get<std::string>();
    if (r.prompt_text->empty()) throw invalid_request("'prompt' must not be empty", "prompt");
  } else if (one.is_array() && !one.empty() && one[0].is_number()) {
    r.prompt_ids = token_ids(one, "prompt");
  } else if (one.is_array() && one.size() > 1) {
    throw invalid_request("'prompt': one prompt per request (a string, or a list of token ids), got a list of " +
                              std::to_string(one.size()) + " prompts", "prompt");
  } else {
    throw invalid_request("'prompt' must be a non-empty string or list of token ids, got " + shown(*p), "prompt");
  }
  // With echo, 0 (as vLLM): the prompt alone comes back (with logprobs: scored).
  r.max_tokens = integer_in(body, "max_tokens", r.echo ? 0 : 1, kMaxNewTokens).value_or(16);
  if (const Json* lp = field(body, "logprobs")) {
    if (lp->is_boolean()) throw invalid_request("'logprobs' must be an integer between 0 and 5, got " + shown(*lp), "logprobs");
    r.logprobs = static_cast<int>(*integer_in(body, "logprobs", 0, kMaxCompletionLogprobs));
  }
  return r;
}

ApiRequest parse_chat_request(const Json& body) {
  ApiRequest r;
  r.chat = true;
  parse_common(body, r);
  r.chat_input = chat_input(body);
  r.tool_choice = tool_choice(body, r.chat_input.tools);
  r.max_tokens = max_tokens(body, "max_completion_tokens");
  if (!r.max_tokens) r.max_tokens = max_tokens(body, "max_tokens");
  if (boolean(body, "logprobs").value_or(false)) {
    r.logprobs = static_cast<int>(integer_in(body, "top_logprobs", 0, kMaxChatTopLogprobs).value_or(0));
  } else if (integer_in(body, "top_logprobs", 0, kMaxChatTopLogprobs)) {
    throw invalid_request("'top_logprobs' needs \"logprobs\": true", "top_logprobs");
  }
  return r;
}

TokenizeRequest parse_tokenize_request(const Json& body) {
  TokenizeRequest r;
  if (!body.is_object()) throw invalid_request("the request body must be a JSON object");
  const bool has_prompt = field(body, "prompt") != nullptr, has_messages = field(body, "messages") != nullptr;
  if (has_prompt == has_messages) throw invalid_request("give exactly one of 'prompt' (a string) or 'messages'", "prompt");
  if (has_prompt) {
    r.prompt = string_field(body, "prompt");
  } else {
    r.chat = chat_input(body);
  }
  r.add_special_tokens = boolean(body, "add_special_tokens").value_or(has_prompt);
  return r;
}

std::vector<std::int32_t> parse_detokenize_request(const Json& body) {
  const Json* t = body.is_object() ? field(body, "tokens") : nullptr;
  if (!t || !t->is_array()) throw invalid_request("'tokens' is required: a list of token ids", "tokens");
  return token_ids(*t, "tokens");
}

}  // namespace plexus
