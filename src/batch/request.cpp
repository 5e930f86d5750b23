// Input lines of `plexus batch`: {"id", "prompt" | "ids", "max_tokens"?, "temperature"?, "seed"?}.
#include "batch/request.h"

#include <fstream>
#include <limits>
#include <unordered_map>

#include "core/error.h"
#include "model/token_id.h"
#include "runtime/sampler.h"

namespace plexus::batch {

namespace {

const char* const kKnownKeys[] = {"id", "prompt", "ids", "max_tokens", "temperature", "seed"};

std::int64_t integer_field(const Json& obj, const char* key, std::int64_t lo, std::int64_t hi) {
  const Json& v = obj.at(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
    throw InputError(std::string("\"") + key + "\" must be an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got " + v.dump());
  }
  return v.get<std::int64_t>();
}

}  // namespace

BatchRequest parse_request_line(const std::string& text, const ParseContext& context) {
  Json obj;
  try {
    obj = parse_json(text, "the line");  // depth-limited; numbers too large for a double refused
  } catch (const InputError& e) {
    throw InputError(std::string("not JSON (") + e.what() + ")");
  }
  if (!obj.is_object()) throw InputError("not a JSON object");
  BatchRequest r;
  if (!obj.contains("id")) throw InputError("no \"id\"");
  r.id = obj["id"];
  if (!r.id.is_string() && !r.id.is_number_integer()) throw InputError("\"id\" must be a string or an integer, got " + r.id.dump());
  r.key = r.id.dump();
  for (const auto& [k, v] : obj.items()) {
    bool known = false;
    for (const char* kk : kKnownKeys) known = known || k == kk;
    if (!known) throw InputError("unknown field \"" + k + "\" (fields: id, prompt | ids, max_tokens, temperature, seed)");
  }
  const bool has_prompt = obj.contains("prompt"), has_ids = obj.contains("ids");
  if (has_prompt == has_ids) throw InputError("give exactly one of \"prompt\" (text) or \"ids\" (token ids)");
  if (has_prompt) {
    if (!obj["prompt"].is_string()) throw InputError("\"prompt\" must be a string");
    if (!context.tokenizer) throw InputError("\"prompt\" needs a tokenizer, but the model has no tokenizer.json: give \"ids\"");
    try {
      r.seq.prompt = context.tokenizer->encode(obj["prompt"].get<std::string>(), /*add_special_tokens=*/true);
    } catch (const std::exception& e) {  // e.g. the regex engine's limits on a huge piece
      throw InputError(std::string("\"prompt\" cannot be tokenized: ") + e.what());
    }
  } else {
    const Json& ids = obj["ids"];
    if (!ids.is_array()) throw InputError("\"ids\" must be an array of token ids");
    for (const Json& v : ids) {
      if (!v.is_number_integer()) throw InputError("\"ids\" holds " + v.dump() + ", not a token id");
      r.seq.prompt.push_back(json_token_id(v, context.vocab_size));
    }
  }
  if (r.seq.prompt.empty()) throw InputError("the prompt is empty");
  r.seq.max_tokens = obj.contains("max_tokens") ? integer_field(obj, "max_tokens", 1, kMaxNewTokens) : context.defaults.max_tokens;
  if (context.max_context > 0 && r.seq.max_tokens > context.max_context - static_cast<std::int64_t>(r.seq.prompt.size())) {
    throw InputError("prompt (" + std::to_string(r.seq.prompt.size()) + " tokens) + max_tokens (" +
                     std::to_string(r.seq.max_tokens) + ") exceeds the model's context of " +
                     std::to_string(context.max_context) + " tokens");
  }
  r.seq.sampling = context.defaults.sampling;
  if (obj.contains("temperature")) {
    const Json& t = obj["temperature"];
    if (!t.is_number() || t.get<double>() < 0 || t.get<double>() > kMaxTemperature) {
      throw InputError("\"temperature\" must be a number in [0, 100], got " + t.dump());
    }
    set_temperature(r.seq.sampling, t.get<double>());  // 0 (or below 1e-5) means greedy, as in OpenAI-style APIs
  }
  if (obj.contains("seed")) {
    r.seq.sampling.seed = static_cast<std::uint64_t>(integer_field(obj, "seed", 0, std::numeric_limits<std::int64_t>::max()));
  }
  return r;
}

ParsedInput read_requests(const std::string& path, const ParseContext& context) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open the input '" + path + "'");
  ParsedInput out;
  std::unordered_map<std::string, std::int64_t> first_line;  // key -> line
  std::string text;
  std::int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
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
      // Keep the id for the errors file when the line had one.
      try {
        const Json j = parse_json(text, path);
        if (j.is_object() && j.contains("id") && (j["id"].is_string() || j["id"].is_number_integer())) b.id = j["id"];
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
