// Text generation and scoring on an Engine: the loops behind `plexus generate` and
// `plexus perplexity`, with their timings.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/sampler.h"

namespace plexus {

struct GenerateOptions {
  std::int64_t max_tokens = 32;
  SamplingOptions sampling;
  std::vector<std::int64_t> stop_ids;  // end of sequence ids; generation stops after one
};

struct GenerateResult {
  std::vector<std::int32_t> ids;  // generated ids only
  std::string finish_reason;      // "stop" (a stop id) | "length"
  std::int64_t prompt_tokens = 0;
  double prefill_s = 0, decode_s = 0, ttft_ms = 0;
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
};

// Calls on_token(id) as each token is chosen (may be empty).
GenerateResult generate(Engine& engine, std::span<const std::int32_t> prompt, const GenerateOptions& options,
                        const std::function<void(std::int32_t)>& on_token = {});

struct PerplexityResult {
  std::vector<double> nll;  // natural-log NLL of ids[t+1] given ids[..t], t = 0..n-2
  double ppl = 0;           // exp(mean nll)
  std::int64_t n_tokens = 0;  // tokens fed in
  double seconds = 0;
  double tokens_per_s = 0;
};

PerplexityResult perplexity(Engine& engine, std::span<const std::int32_t> ids);

}  // namespace plexus
