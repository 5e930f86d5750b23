// Picks the next token from logits, in vLLM's order (v1/sample/sampler.py): logit_bias added,
// then the penalties (repetition over the prompt and the output so far, frequency and presence
// over the output), then greedy — or temperature → min-p → top-k → top-p sampling with a seeded
// generator.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <utility>
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
// vLLM's ranges: presence and frequency penalties in [-kMaxPenalty, kMaxPenalty], a repetition
// penalty above 0, min_p in [0, 1]; a logit_bias value in [-kMaxLogitBias, kMaxLogitBias] (OpenAI's).
inline constexpr double kMaxPenalty = 2;
inline constexpr double kMaxLogitBias = 100;

struct SamplingOptions {
  bool greedy = true;
  double temperature = 1.0;
  std::int64_t top_k = 0;   // 0: no limit
  double top_p = 1.0;       // 1: no limit
  double min_p = 0;         // 0: no limit; else drop tokens below min_p × the likeliest's probability
  std::uint64_t seed = 0;
  // Subtracted from a token's logit: presence_penalty once if it is in the output so far,
  // frequency_penalty × its count there. 0: off.
  double presence_penalty = 0, frequency_penalty = 0;
  // A token of the prompt or the output so far: logit / p when positive, logit × p otherwise. 1: off.
  double repetition_penalty = 1;
  std::vector<std::pair<std::int32_t, float>> logit_bias;  // (token id, added to its logit), ids < vocab

  bool penalized() const { return presence_penalty != 0 || frequency_penalty != 0 || repetition_penalty != 1; }
};

// The one temperature rule of generate, batch, bench and serve: `t` (finite, in
// [0, kMaxTemperature], checked by the caller with its own flag or field name) below
// kGreedyBelowTemperature makes `s` greedy, otherwise sampling at temperature t.
void set_temperature(SamplingOptions& s, double t);

// The tokens the penalties look at: the prompt's (given only with a repetition penalty) and the
// output's with their counts. Kept only when a penalty is on; apply() visits these tokens alone,
// never the whole vocabulary.
class TokenHistory {
 public:
  TokenHistory() = default;
  TokenHistory(std::int64_t vocab, std::span<const std::int32_t> prompt);
  void add_output(std::int32_t id);
  // logits (vocab): the penalties of `o` applied in vLLM's order — repetition (prompt and
  // output tokens), then frequency, then presence (output tokens).
  void apply(float* logits, const SamplingOptions& o) const;

 private:
  void touch(std::int32_t id);
  std::vector<std::int32_t> output_count_;  // (vocab) times each id was generated
  std::vector<bool> touched_mask_;          // (vocab) in the prompt or the output
  std::vector<std::int32_t> touched_;       // the ids of touched_mask_, each once
};

// logits (vocab) += each logit_bias of `o` (ids already checked < vocab).
void apply_logit_bias(float* logits, const SamplingOptions& o);

class Sampler {
 public:
  // `prompt`: the sequence's prompt (the repetition penalty's tokens; unused without it).
  // InputError for options out of range.
  Sampler(const SamplingOptions& options, std::int64_t vocab_size, std::span<const std::int32_t> prompt = {});
  // logits (vocab); modified. Returns the chosen id, which joins the output the penalties count.
  std::int32_t sample(float* logits);

 private:
  std::int32_t choose(const float* logits);  // greedy or sampled, from the processed logits
  SamplingOptions options_;
  std::mt19937_64 rng_;
  TokenHistory history_;
  std::vector<std::int32_t> order_;  // (vocab) scratch
  std::vector<double> probs_;        // (vocab) scratch
};

// Index of the largest logit (the first one on ties).
std::int32_t argmax(const float* logits, std::int64_t n);

}  // namespace plexus
