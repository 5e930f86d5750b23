// The generation flags shared by `generate` and `batch`: --max-tokens, --greedy, --temperature,
// --top-k, --top-p, --seed, --ignore-eos. Declared once, read once.
#pragma once
#include <cstdint>
#include <vector>

#include "core/args.h"
#include "model/config.h"
#include "runtime/generate.h"
#include "tokenizer/tokenizer.h"

namespace plexus::cli {

// The help lines that differ between commands (batch requests may override these per line).
struct GenerationHelp {
  const char* max_tokens = "tokens to generate at most";
  const char* temperature = "sample with this temperature (0, or anything below 1e-5: greedy)";
  const char* seed = "random seed for sampling";
};
void add_generation_options(Args& args, const GenerationHelp& help = {});

// max_tokens and sampling from the flags (stop_ids left empty: see stop_ids()). InputError naming
// the flag and its range for --max-tokens outside 1..2^24, --temperature outside 0..100 (or not
// finite), --top-k outside 0..2^31-1, --top-p outside (0, 1], a negative --seed, or --greedy with
// --temperature; top-k and top-p are checked even when decoding is greedy. A temperature below
// kGreedyBelowTemperature is greedy (runtime/sampler.h set_temperature).
GenerateOptions generation_options(const Args& args);

// End-of-sequence ids (config.json's and the tokenizer's), or none with --ignore-eos.
std::vector<std::int64_t> stop_ids(const Args& args, const ModelConfig& config, const Tokenizer* tokenizer);

}  // namespace plexus::cli
