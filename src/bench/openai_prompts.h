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

// `count` requests (the prompts taken in order, again from the first when they run out; random
// ones drawn with `seed`). max_tokens: the dataset's length where it gives one, else
// scenario.max_tokens. InputError "scenario.KEY: ..." or "DATASET:LINE: ..." for what cannot
// be sent (random or chat with token ids need the tokenizer).
std::vector<LoadRequest> openai_requests(const ScenarioConfig& s, const OpenAiConfig& o, const Tokenizer* tokenizer,
                                         std::size_t count, std::uint64_t seed);

// How many distinct prompts the scenario gives (0 for random prompts: num_samples decides).
std::size_t openai_prompt_count(const ScenarioConfig& s, const OpenAiConfig& o, const Tokenizer* tokenizer);

}  // namespace plexus::bench
