// Picks the next token from logits: greedy, or temperature → top-k → top-p sampling with a
// seeded generator (the order Hugging Face applies them in).
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/sampling_params.h"

namespace plexus {

// The ranges every command accepts (generate's flags, batch request lines, bench scenarios).
inline constexpr double kMaxTemperature = 100;
// A temperature below this one means greedy decoding (0 included): the limit of
// softmax(logits / T) as T -> 0, and vLLM's threshold. Far smaller ones overflow logits / T
// (1e-310 made every token the vocabulary's last id). docs/cli.md and docs/serve.md say so.
// The GPU sampler's kSampleGreedyBelow (kernels/sampling_params.h) is this one.
inline constexpr double kGreedyBelowTemperature = kSampleGreedyBelow;
inline constexpr long long kMaxTopK = 2147483647;
inline constexpr long long kMaxNewTokens = 1LL << 24;

struct SamplingOptions {
  bool greedy = true;
  double temperature = 1.0;
  std::int64_t top_k = 0;   // 0: no limit
  double top_p = 1.0;       // 1: no limit
  std::uint64_t seed = 0;
};

// The one temperature rule of generate, batch, bench and serve: `t` (finite, in
// [0, kMaxTemperature], checked by the caller with its own flag or field name) below
// kGreedyBelowTemperature makes `s` greedy, otherwise sampling at temperature t.
void set_temperature(SamplingOptions& s, double t);

class Sampler {
 public:
  Sampler(const SamplingOptions& options, std::int64_t vocab_size);
  // logits (vocab); may be modified. Returns the chosen id.
  std::int32_t sample(float* logits);

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::int32_t> order_;  // (vocab) scratch
  std::vector<double> probs_;        // (vocab) scratch
};

// Index of the largest logit (the first one on ties).
std::int32_t argmax(const float* logits, std::int64_t n);

}  // namespace plexus
