// Input lines of `plexus batch`: plexus's own {"id", "prompt" | "ids" | "messages", ...body fields}
// and the OpenAI Batch API's {"custom_id", "method", "url", "body"}, one format per file.
#include "batch/request.h"

#include <fstream>
#include <unordered_map>

#include "batch/api_body.h"
#include "batch/openai_batch.h"
#include "core/error.h"
#include "model/token_id.h"
#include "serve/api_error.h"

namespace plexus::batch {

namespace {

const char* format_name(LineFormat f) {
  return f == LineFormat::kOpenAi ? "an OpenAI Batch API line (with \"custom_id\")" : "a plexus batch line (with \"id\")";
}

// {"id", "prompt" | "ids" | "messages", and the fields of a completion or chat body}: the body
// fields through the server's parser, what they leave out from the command's flags.
BatchRequest parse_plexus_line(const Json& obj, const std::string& text, const ParseContext& context) {
  BatchRequest r;
  if (!obj.contains("id")) throw InputError("no \"id\"");
  r.id = obj["id"];
  if (!r.id.is_string() && !r.id.is_number_integer()) throw InputError("\"id\" must be a string or an integer, got " + r.id.dump());
  r.key = r.id.dump();
  const bool has_prompt = obj.contains("prompt"), has_ids = obj.contains("ids"), chat = obj.contains("messages");
  for (const auto& [k, v] : obj.items()) {
    if (k == "id" || k == "ids" || k == "prompt" || k == "messages" || is_body_field(k, chat)) continue;
    throw InputError("unknown field \"" + k + "\" (fields: id, prompt | ids | messages, and those of a " +
                     (chat ? "/v1/chat/completions" : "/v1/completions") + " body: max_tokens, temperature, seed, top_p, top_k, stop, ...)");
  }
  if (has_prompt + has_ids + chat != 1) {
    throw InputError("give exactly one of \"prompt\" (text), \"ids\" (token ids) or \"messages\" (a chat)");
  }
  Json body = obj;
  body.erase("id");
  if (has_ids) {
    const Json& ids = obj["ids"];
    if (!ids.is_array()) throw InputError("\"ids\" must be an array of token ids");
    if (ids.empty()) throw InputError("the prompt is empty");
    for (const Json& v : ids) {
      if (!v.is_number_integer()) throw InputError("\"ids\" holds " + v.dump() + ", not a token id");
      (void)json_token_id(v, context.vocab_size);  // InputError naming the id outside the vocabulary
    }
    body.erase("ids");
    body["prompt"] = ids;
  }
  if (has_prompt && obj["prompt"].is_string() && obj["prompt"].get<std::string>().empty()) throw InputError("the prompt is empty");
  std::string body_text;
  if (chat) {
    nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(text);  // the client's key order
    ordered.erase("id");
    body_text = ordered.dump();
  }
  parse_body_into(body, body_text, chat, BodyDefaults::kCommand, context, r);
  return r;
}

Json parse_line_json(const std::string& text) {
  Json obj;
  try {
    obj = parse_json(text, "the line");  // depth-limited; numbers too large for a double refused
  } catch (const InputError& e) {
    throw InputError(std::string("not JSON (") + e.what() + ")");
  }
  if (!obj.is_object()) throw InputError("not a JSON object");
  return obj;
}

// The line's format, when it is a JSON object.
std::optional<LineFormat> format_of(const std::string& text) {
  try {
    const Json j = parse_json(text, "the line");
    if (j.is_object()) return line_format(j);
  } catch (const InputError&) {
  }
  return std::nullopt;
}

}  // namespace

LineFormat line_format(const Json& line) { return line.contains("custom_id") ? LineFormat::kOpenAi : LineFormat::kPlexus; }

BatchRequest parse_request_line(const std::string& text, const ParseContext& context) {
  const Json obj = parse_line_json(text);
  try {
    return line_format(obj) == LineFormat::kOpenAi ? parse_openai_line(obj, text, context) : parse_plexus_line(obj, text, context);
  } catch (const ApiError& e) {
    throw RefusedBody(e.what(), e.code().empty() ? "invalid_request" : e.code());
  }
}

ParsedInput read_requests(const std::string& path, const ParseContext& context) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open the input '" + path + "'");
  ParsedInput out;
  std::int64_t format_line = 0;  // the first line whose format is known
  std::unordered_map<std::string, std::int64_t> first_line;  // key -> line
  std::string text;
  std::int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    // One input, one output format: a line of the other format is no bad line to skip.
    if (const std::optional<LineFormat> f = format_of(text)) {
      if (format_line == 0) {
        out.format = *f;
        format_line = line;
      } else if (*f != out.format) {
        throw InputError(path + ":" + std::to_string(line) + ": " + format_name(*f) + " after " + format_name(out.format) +
                         " on line " + std::to_string(format_line) + ": an input holds lines of one format (its results are written in it)");
      }
    }
    try {
      BatchRequest r = parse_request_line(text, context);
      r.line = line;
      const auto [it, fresh] = first_line.emplace(r.key, line);
      if (!fresh) {
        out.bad.push_back({line, "duplicate id " + r.key + " (first on line " + std::to_string(it->second) + ")", std::nullopt});
        continue;
      }
      out.requests.push_back(std::move(r));
    } catch (const std::exception& e) {  // whatever one line does, it is only that line
      BadLine b{line, e.what(), std::nullopt};
      if (const auto* refused = dynamic_cast<const RefusedBody*>(&e)) b.code = refused->code();
      // Keep the id for the errors file when the line had one.
      try {
        const Json j = parse_json(text, path);
        const char* id_key = out.format == LineFormat::kOpenAi ? "custom_id" : "id";
        if (j.is_object() && j.contains(id_key) && (j[id_key].is_string() || j[id_key].is_number_integer())) b.id = j[id_key];
      } catch (const InputError&) {
      }
      out.bad.push_back(std::move(b));
    }
  }
  if (in.bad()) throw RuntimeError("cannot read the input '" + path + "'");
  return out;
}

std::string describe_bad_line(const std::string& path, const BadLine& bad) {
  return path + ":" + std::to_string(bad.line) + ": " + bad.reason;
}

}  // namespace plexus::batch
