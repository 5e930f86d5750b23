#include "serve/tool_calls.h"

#include <optional>

#include "core/error.h"
#include "core/json.h"

namespace plexus {

namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<Json> parse_json(std::string_view text) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// {"name": "...", "arguments" or "parameters": {...}} → a call; the arguments may also come as
// a string holding a JSON object (as some models write them).
std::optional<ToolCall> call_of(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  Json a = Json::object();
  if (args != j.end()) {
    if (args->is_string()) {
      const std::optional<Json> inner = parse_json(args->get<std::string>());
      if (!inner || !inner->is_object()) return std::nullopt;
      a = *inner;
    } else if (args->is_object()) {
      a = *args;
    } else {
      return std::nullopt;
    }
  }
  return ToolCall{name->get<std::string>(), a.dump()};
}

// The length of the JSON object or list at the start of `s` (brackets matched outside strings);
// 0 when it does not close.
std::size_t json_extent(std::string_view s) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return 0;
}

// Llama 3 JSON: [<|python_tag|>] call [; call]... and nothing else.
std::optional<std::vector<ToolCall>> llama3_calls(std::string_view out) {
  std::string_view s = trim(out);
  if (s.substr(0, kPythonTag.size()) == kPythonTag) s = trim(s.substr(kPythonTag.size()));
  if (s.empty() || s.front() != '{') return std::nullopt;
  std::vector<ToolCall> calls;
  while (!s.empty()) {
    const std::size_t n = json_extent(s);
    if (n == 0) return std::nullopt;
    const std::optional<Json> j = parse_json(s.substr(0, n));
    if (!j) return std::nullopt;
    const std::optional<ToolCall> c = call_of(*j);
    if (!c) return std::nullopt;
    calls.push_back(*c);
    s = trim(s.substr(n));
    if (!s.empty() && s.front() == ';') s = trim(s.substr(1));
  }
  return calls;
}

// Hermes: the text after the first <tool_call> (marker included): blocks, the last may be open.
// What follows the last block that parses (text, or a block that does not parse) is `rest`:
// content, as a stream hands it out. nullopt when the first block does not parse.
std::optional<std::vector<ToolCall>> hermes_calls(std::string_view s, std::string_view* rest) {
  std::vector<ToolCall> calls;
  auto done = [&](std::string_view left) -> std::optional<std::vector<ToolCall>> {
    if (calls.empty()) return std::nullopt;
    *rest = trim(left).empty() ? std::string_view{} : left;
    return calls;
  };
  for (;;) {
    const std::string_view block = s;
    s = trim(s);
    if (s.empty()) return done({});
    if (s.substr(0, kHermesOpen.size()) != kHermesOpen) return done(block);
    s.remove_prefix(kHermesOpen.size());
    const std::size_t close = s.find(kHermesClose);
    const std::optional<Json> j = parse_json(trim(s.substr(0, close)));
    const std::optional<ToolCall> c = j ? call_of(*j) : std::nullopt;
    if (!c) return done(block);
    calls.push_back(*c);
    if (close == std::string_view::npos) return done({});
    s.remove_prefix(close + kHermesClose.size());
  }
}

// Mistral: the text after [TOOL_CALLS] (marker excluded): a JSON list of calls, or
// name[ARGS]{...} with [TOOL_CALLS] before each further call.
std::optional<std::vector<ToolCall>> mistral_calls(std::string_view s) {
  s = trim(s);
  std::vector<ToolCall> calls;
  if (!s.empty() && s.front() == '[') {
    const std::optional<Json> j = parse_json(s);
    if (!j || !j->is_array() || j->empty()) return std::nullopt;
    for (const Json& e : *j) {
      const std::optional<ToolCall> c = call_of(e);
      if (!c) return std::nullopt;
      calls.push_back(*c);
    }
    return calls;
  }
  while (!s.empty()) {
    const std::size_t args = s.find(kMistralArgs);
    if (args == std::string_view::npos) return std::nullopt;
    const std::string name(trim(s.substr(0, args)));
    s.remove_prefix(args + kMistralArgs.size());
    const std::size_t next = s.find(kMistralCalls);
    const std::optional<Json> a = parse_json(trim(s.substr(0, next)));
    if (name.empty() || !a || !a->is_object()) return std::nullopt;
    calls.push_back(ToolCall{name, a->dump()});
    s = next == std::string_view::npos ? std::string_view{} : trim(s.substr(next + kMistralCalls.size()));
  }
  return calls.empty() ? std::nullopt : std::optional(calls);
}

// A JSON list of calls and nothing else.
std::optional<std::vector<ToolCall>> json_list_calls(std::string_view out) {
  const std::string_view s = trim(out);
  if (s.empty() || s.front() != '[') return std::nullopt;
  const std::optional<Json> j = parse_json(s);
  if (!j || !j->is_array() || j->empty()) return std::nullopt;
  std::vector<ToolCall> calls;
  for (const Json& e : *j) {
    const std::optional<ToolCall> c = call_of(e);
    if (!c) return std::nullopt;
    calls.push_back(*c);
  }
  return calls;
}

std::string_view marker(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes: return kHermesOpen;
    case ToolCallFormat::kMistral: return kMistralCalls;
    default: return {};
  }
}

// The longest suffix of `text` that is a proper prefix of `m`.
std::size_t marker_prefix_suffix(std::string_view text, std::string_view m) {
  for (std::size_t n = std::min(text.size(), m.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == m.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ToolCallFormat tool_call_format(std::string_view source) {
  if (source.find(kMistralCalls) != std::string_view::npos) return ToolCallFormat::kMistral;
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (source.find(kPythonTag) != std::string_view::npos ||
      (source.find("ipython") != std::string_view::npos && source.find("parameters") != std::string_view::npos)) {
    return ToolCallFormat::kLlama3Json;
  }
  return ToolCallFormat::kNone;
}

const char* format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kLlama3Json: return "llama3_json";
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kMistral: return "mistral";
    case ToolCallFormat::kJsonList: return "json_list";
  }
  return "none";
}

ToolCallFormat tool_call_format_named(std::string_view name) {
  for (ToolCallFormat f : {ToolCallFormat::kNone, ToolCallFormat::kLlama3Json, ToolCallFormat::kHermes, ToolCallFormat::kMistral}) {
    if (name == format_name(f)) return f;
  }
  throw InputError("--tool-call-parser: unknown tool-call format '" + std::string(name) + "': use llama3_json, hermes, mistral, none or auto");
}

ParsedOutput parse_tool_calls(ToolCallFormat f, std::string_view out) {
  ParsedOutput whole{std::string(out), {}};
  switch (f) {
    case ToolCallFormat::kNone: return whole;
    case ToolCallFormat::kLlama3Json:
    case ToolCallFormat::kJsonList: {
      std::optional<std::vector<ToolCall>> calls = f == ToolCallFormat::kJsonList ? json_list_calls(out) : llama3_calls(out);
      return calls ? ParsedOutput{"", std::move(*calls)} : whole;
    }
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kMistral: {
      const std::size_t at = out.find(marker(f));
      if (at == std::string_view::npos) return whole;
      std::string_view rest;
      std::optional<std::vector<ToolCall>> calls =
          f == ToolCallFormat::kHermes ? hermes_calls(out.substr(at), &rest) : mistral_calls(out.substr(at + kMistralCalls.size()));
      if (!calls) return whole;
      const std::string_view before = out.substr(0, at);
      return ParsedOutput{(trim(before).empty() ? "" : std::string(before)) + std::string(rest), std::move(*calls)};
    }
  }
  return whole;
}

ParsedOutput ToolCallStream::feed(std::string_view text) {
  pending_ += text;
  ParsedOutput out;
  if (format_ == ToolCallFormat::kNone) {
    out.content = std::move(pending_);
    pending_.clear();
    return out;
  }
  if (format_ == ToolCallFormat::kJsonList) {
    in_calls_ = true;  // the whole answer is the list: held to the end
    return out;
  }
  if (format_ == ToolCallFormat::kLlama3Json) {
    // A call is the whole output: decided by its first non-space text.
    if (!started_ && !in_calls_) {
      const std::string_view t = trim(pending_);
      if (t.empty()) return out;
      if (t.front() == '{' || t.substr(0, kPythonTag.size()) == kPythonTag) {
        in_calls_ = true;
      } else if (kPythonTag.substr(0, t.size()) == t) {
        return out;  // could still become <|python_tag|>
      } else {
        started_ = true;
      }
    }
    if (!in_calls_) {
      out.content = std::move(pending_);
      pending_.clear();
    }
    return out;
  }
  if (!in_calls_) {
    const std::size_t at = pending_.find(marker(format_));
    if (at != std::string::npos) {
      in_calls_ = true;
      out.content = pending_.substr(0, at);
      pending_.erase(0, at);
    } else {
      const std::size_t keep = marker_prefix_suffix(pending_, marker(format_));
      out.content = pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return out;
    }
  }
  // Hermes: each block as soon as it closes.
  while (format_ == ToolCallFormat::kHermes) {
    const std::size_t open = pending_.find(kHermesOpen);
    const std::size_t close = pending_.find(kHermesClose);
    if (open == std::string::npos || close == std::string::npos || close < open || !trim(pending_.substr(0, open)).empty()) break;
    const std::size_t end = close + kHermesClose.size();
    std::string_view rest;
    std::optional<std::vector<ToolCall>> calls = hermes_calls(std::string_view(pending_).substr(open, end - open), &rest);
    if (!calls) break;  // held to the end, where it becomes content
    for (ToolCall& c : *calls) out.calls.push_back(std::move(c));
    pending_.erase(0, end);
  }
  return out;
}

ParsedOutput ToolCallStream::finish() {
  ParsedOutput out;
  if (!in_calls_) out.content = pending_;
  else if (!trim(pending_).empty()) out = parse_tool_calls(format_, pending_);  // (spaces after the last call: nothing)
  pending_.clear();
  return out;
}

}  // namespace plexus
