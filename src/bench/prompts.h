// The prompts of a benchmark scenario as token ids: from a JSONL dataset ({"prompt": TEXT} or
// {"ids": [...]} per line), a list of texts, or lists of ids.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_config.h"
#include "tokenizer/tokenizer.h"

namespace plexus::bench {

// Every distinct prompt, in order. Texts need `tokenizer` (InputError naming the model
// otherwise); ids must lie in [0, vocab). Dataset errors name FILE:LINE.
std::vector<std::vector<std::int32_t>> scenario_prompts(const ScenarioConfig& s, const Tokenizer* tokenizer,
                                                        std::int64_t vocab, const std::string& model_dir);

// n prompts taken in order from `prompts`, starting again from the first when they run out.
std::vector<std::vector<std::int32_t>> cycle_prompts(const std::vector<std::vector<std::int32_t>>& prompts, std::int64_t n);

}  // namespace plexus::bench
