// Prompts and lengths for the OpenAI load generator (bench/openai_prompts.h).
#include "bench/openai_prompts.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"

namespace plexus::bench {

namespace {

std::int64_t count_tokens(const Tokenizer* tok, const std::string& text, bool special) {
  return tok ? static_cast<std::int64_t>(tok->encode(text, special).size()) : -1;
}

LoadRequest text_request(const std::string& text, std::int64_t max_tokens, const Tokenizer* tok) {
  return {Json(text), count_tokens(tok, text, true), max_tokens};
}

LoadRequest ids_request(const std::vector<std::int32_t>& ids, std::int64_t max_tokens, const OpenAiConfig& o, const Tokenizer* tok,
                        const std::string& where) {
  if (o.endpoint == "chat") {
    if (!tok) throw InputError(where + ": token ids need backend.tokenizer with endpoint chat (messages are text)");
    return {Json(tok->decode(ids)), static_cast<std::int64_t>(ids.size()), max_tokens};
  }
  return {Json(ids), static_cast<std::int64_t>(ids.size()), max_tokens};
}

// One dataset record → a request; `where` is "FILE:LINE".
LoadRequest dataset_request(const Json& j, const ScenarioConfig& s, const OpenAiConfig& o, const Tokenizer* tok, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": expected an object with \"prompt\", \"ids\" or \"conversations\"");
  std::int64_t max_tokens = s.max_new_tokens;
  if (j.contains("output_tokens")) {
    if (!j["output_tokens"].is_number_integer() || j["output_tokens"].get<std::int64_t>() < 1) {
      throw InputError(where + ": \"output_tokens\" must be a positive integer");
    }
    max_tokens = j["output_tokens"].get<std::int64_t>();
  }
  if (j.contains("prompt")) {
    if (!j["prompt"].is_string() || j["prompt"].get<std::string>().empty()) throw InputError(where + ": \"prompt\" must be a non-empty string");
    return text_request(j["prompt"].get<std::string>(), max_tokens, tok);
  }
  if (j.contains("ids")) {
    std::vector<std::int32_t> ids;
    if (j["ids"].is_array()) {
      for (const Json& v : j["ids"]) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0) throw InputError(where + ": \"ids\" must hold token ids (integers >= 0)");
        ids.push_back(v.get<std::int32_t>());
      }
    }
    if (ids.empty()) throw InputError(where + ": \"ids\" must be a non-empty list of token ids");
    return ids_request(ids, max_tokens, o, tok, where);
  }
  if (j.contains("conversations") && j["conversations"].is_array()) {
    std::string prompt;
    std::optional<std::string> answer;
    for (const Json& turn : j["conversations"]) {
      if (!turn.is_object() || !turn.contains("value") || !turn["value"].is_string()) continue;
      const std::string from = turn.value("from", std::string());
      if (prompt.empty() && (from == "human" || from == "user")) prompt = turn["value"].get<std::string>();
      else if (!prompt.empty() && (from == "gpt" || from == "assistant")) {
        answer = turn["value"].get<std::string>();
        break;
      }
    }
    if (prompt.empty()) throw InputError(where + ": \"conversations\" has no human turn with a \"value\"");
    if (answer && tok && !j.contains("output_tokens")) max_tokens = std::max<std::int64_t>(1, count_tokens(tok, *answer, false));
    return text_request(prompt, max_tokens, tok);
  }
  throw InputError(where + ": expected \"prompt\", \"ids\" or \"conversations\" (ShareGPT)");
}

std::vector<LoadRequest> dataset_requests(const ScenarioConfig& s, const OpenAiConfig& o, const Tokenizer* tok) {
  std::ifstream in(s.dataset);
  if (!in) throw InputError(s.dataset + ": cannot read the dataset");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<LoadRequest> out;
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {  // one JSON array (ShareGPT's files)
    const Json all = Json::parse(text, nullptr, false);
    if (!all.is_array()) throw InputError(s.dataset + ": starts with '[' but is not a JSON array");
    for (std::size_t i = 0; i < all.size(); ++i) out.push_back(dataset_request(all[i], s, o, tok, s.dataset + ": [" + std::to_string(i) + "]"));
  } else {
    std::istringstream lines(text);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const Json j = Json::parse(line, nullptr, false);
      if (j.is_discarded()) throw InputError(s.dataset + ":" + std::to_string(n) + ": not a JSON object");
      out.push_back(dataset_request(j, s, o, tok, s.dataset + ":" + std::to_string(n)));
    }
  }
  if (out.empty()) throw InputError(s.dataset + ": the dataset holds no prompts");
  return out;
}

// A length drawn around `mean` as scenario.random says; at least 1.
std::int64_t draw_length(std::mt19937_64& rng, const RandomLengths& r, double mean) {
  double v = mean;
  if (r.distribution == "uniform") {
    v = std::uniform_real_distribution<double>(mean * (1 - r.range_ratio), mean * (1 + r.range_ratio))(rng);
  } else if (r.distribution == "normal") {
    v = r.range_ratio > 0 ? std::normal_distribution<double>(mean, r.range_ratio * mean)(rng) : mean;
  } else if (r.distribution == "exponential") {
    v = std::exponential_distribution<double>(1.0 / mean)(rng);
  }
  return std::max<std::int64_t>(1, std::llround(v));
}

}  // namespace

std::vector<LoadRequest> scenario_requests(const ScenarioConfig& s, const OpenAiConfig& o, const Tokenizer* tok) {
  std::vector<LoadRequest> out;
  if (o.random) return out;
  if (!s.dataset.empty()) return dataset_requests(s, o, tok);
  for (const std::string& p : s.prompts) out.push_back(text_request(p, s.max_new_tokens, tok));
  for (std::size_t i = 0; i < s.prompts_ids.size(); ++i) {
    out.push_back(ids_request(s.prompts_ids[i], s.max_new_tokens, o, tok, "scenario.prompts_ids[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<LoadRequest> openai_requests(const std::vector<LoadRequest>& base, const OpenAiConfig& o, const Tokenizer* tok,
                                         std::size_t count, std::uint64_t seed) {
  std::vector<LoadRequest> out;
  if (o.random) {
    if (!tok) throw InputError("scenario.random: random prompts need backend.tokenizer (to pick the server's token ids and make text of them)");
    std::mt19937_64 rng(seed);
    const std::int32_t vocab = tok->vocab_size();
    std::uniform_int_distribution<std::int32_t> id(0, std::max(0, vocab - 1));
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t in = draw_length(rng, *o.random, static_cast<double>(o.random->input_tokens));
      const std::int64_t out_len = draw_length(rng, *o.random, static_cast<double>(o.random->output_tokens));
      std::vector<std::int32_t> ids;
      for (std::int64_t k = 0; k < in; ++k) ids.push_back(id(rng));
      // As text (every server takes it; special tokens left out): the server's count may differ a little.
      out.push_back({Json(tok->decode(ids, /*skip_special_tokens=*/true)), in, out_len});
    }
    return out;
  }
  for (std::size_t i = 0; i < count && !base.empty(); ++i) out.push_back(base[i % base.size()]);
  return out;
}

}  // namespace plexus::bench
