// Scenario prompts → token ids.
#include "bench/prompts.h"

#include <fstream>

#include "core/error.h"
#include "model/token_id.h"
#include "core/json.h"

namespace plexus::bench {

namespace {

std::vector<std::int32_t> encode(const Tokenizer* tok, const std::string& text, const std::string& where,
                                 const std::string& model_dir) {
  if (!tok) {
    throw InputError(where + ": text prompts need a tokenizer, but '" + model_dir +
                     "' has no tokenizer.json: give scenario.prompts_ids (or {\"ids\": [...]} lines), or make the model with a tokenizer");
  }
  std::vector<std::int32_t> ids = tok->encode(text, /*add_special_tokens=*/true);
  if (ids.empty()) throw InputError(where + ": the prompt encodes to no tokens");
  return ids;
}

}  // namespace

std::vector<std::vector<std::int32_t>> scenario_prompts(const ScenarioConfig& s, const Tokenizer* tok, std::int64_t vocab,
                                                        const std::string& model_dir) {
  std::vector<std::vector<std::int32_t>> out;
  if (!s.dataset.empty()) {
    std::ifstream in(s.dataset);
    if (!in) throw InputError(s.dataset + ": cannot read the dataset");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      const std::string where = s.dataset + ":" + std::to_string(n);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const Json j = parse_json(line, where);
      if (!j.is_object()) throw InputError(where + ": expected an object with \"prompt\" (text) or \"ids\" (token ids)");
      if (j.contains("prompt") && j["prompt"].is_string()) {
        out.push_back(encode(tok, j["prompt"].get<std::string>(), where, model_dir));
      } else if (j.contains("ids") && j["ids"].is_array() && !j["ids"].empty()) {
        std::vector<std::int32_t> ids;
        for (const Json& v : j["ids"]) {
          if (!v.is_number_integer()) throw InputError(where + ": \"ids\" must hold integers");
          ids.push_back(json_token_id(v, vocab, where));  // 2^32 + 5 is no id 5
        }
        out.push_back(std::move(ids));
      } else {
        throw InputError(where + ": expected a string \"prompt\" or a non-empty \"ids\" list");
      }
    }
    if (out.empty()) throw InputError(s.dataset + ": the dataset has no prompts");
  } else if (!s.prompts.empty()) {
    for (std::size_t i = 0; i < s.prompts.size(); ++i) {
      out.push_back(encode(tok, s.prompts[i], "scenario.prompts[" + std::to_string(i) + "]", model_dir));
    }
  } else {
    for (std::size_t i = 0; i < s.prompts_ids.size(); ++i) {
      check_token_ids(s.prompts_ids[i], vocab, "scenario.prompts_ids[" + std::to_string(i) + "]");
      out.push_back(s.prompts_ids[i]);
    }
  }
  return out;
}

std::vector<std::vector<std::int32_t>> cycle_prompts(const std::vector<std::vector<std::int32_t>>& prompts, std::int64_t n) {
  std::vector<std::vector<std::int32_t>> out;
  if (prompts.empty()) return out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(prompts[static_cast<std::size_t>(i) % prompts.size()]);
  return out;
}

}  // namespace plexus::bench
