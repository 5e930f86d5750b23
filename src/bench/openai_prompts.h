// The requests of a `backend.type: openai` run: from the scenario's prompts or prompts_ids, a
// dataset (JSON lines, or one JSON array: {"prompt": TEXT, "output_tokens": N}, {"ids": [...]},
// or ShareGPT's {"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value":
// ...}]}: the first human turn is the prompt, the first gpt turn's length in tokens the request's
// max_tokens), or random tokens of lengths drawn from scenario.random.
#pragma once
#include <cstdint>
#include <vector>

#include "bench/bench_config.h"
#include "bench/openai_load.h"
#include "tokenizer/tokenizer.h"

namespace plexus::bench {

// The scenario's prompts as requests, once each (none for random prompts). max_tokens: the
// dataset's length where it gives one, else scenario.max_tokens. InputError "scenario.KEY: ..."
// or "DATASET:LINE: ..." for what cannot be sent (chat with token ids needs the tokenizer).
std::vector<LoadRequest> scenario_requests(const ScenarioConfig& s, const OpenAiConfig& o, const Tokenizer* tokenizer);

// `count` requests: `prompts` in order, again from the first when they run out; with
// o.random, prompts of random tokens drawn with `seed` (InputError without a tokenizer).
std::vector<LoadRequest> openai_requests(const std::vector<LoadRequest>& prompts, const OpenAiConfig& o, const Tokenizer* tokenizer,
                                         std::size_t count, std::uint64_t seed);

}  // namespace plexus::bench
