// Text generation and scoring on a Runner (the Executor, on the host or across devices): the
// loops behind `plexus generate` and `plexus perplexity`, with their timings.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/decode_steps.h"
#include "runtime/engine.h"
#include "runtime/runner.h"
#include "runtime/sampler.h"
#include "runtime/token_constraint.h"

namespace plexus {

struct GenerateOptions {
  std::int64_t max_tokens = 32;
  SamplingOptions sampling;
  std::vector<std::int64_t> stop_ids;  // end of sequence ids; generation stops after one
  // Structured output: makes each sequence's constraint (its logits masked before every
  // sampling); empty: none. A sequence its constraint lets go no further ends with "length".
  std::function<std::unique_ptr<TokenConstraint>()> constraint;
};

struct GenerateResult {
  std::vector<std::int32_t> ids;  // generated ids only
  std::string finish_reason;      // "stop" (a stop id) | "length"
  std::int64_t prompt_tokens = 0;
  double prefill_s = 0, decode_s = 0;
  double ttft_ms = 0;  // start of the call to the first generated token
  double e2e_ms = 0;   // start of the call to the last generated token
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
  DecodeSteps steps;
};

// The ids that end a sequence: config.json's eos_token_id(s) and the tokenizer's end-of-sequence
// token when there is one, sorted, each once.
std::vector<std::int64_t> end_of_sequence_ids(const ModelConfig& config, std::optional<std::int64_t> tokenizer_eos);

// Calls on_token(id) as each token is chosen (may be empty).
GenerateResult generate(Runner& runner, std::span<const std::int32_t> prompt, const GenerateOptions& options,
                        const std::function<void(std::int32_t)>& on_token = {});
GenerateResult generate(Engine& engine, std::span<const std::int32_t> prompt, const GenerateOptions& options,
                        const std::function<void(std::int32_t)>& on_token = {});

// One sequence of a batch with its own length limit and sampling (seed included), so that its
// output depends on nothing but itself: not on the other sequences or its place in the batch.
struct SequenceRequest {
  std::vector<std::int32_t> prompt;
  std::int64_t max_tokens = 32;
  SamplingOptions sampling;
  // The ids that end this sequence (a request's own: e.g. none under ignore_eos); nullopt: the
  // call's stop_ids.
  std::optional<std::vector<std::int64_t>> stop_ids;
  std::shared_ptr<TokenConstraint> constraint;  // structured output (null: none)
  // Called with each chosen id and the raw logits (vocab) it was chosen from (before the
  // constraint's mask and the sampler), e.g. for log-probabilities; empty: not called.
  std::function<void(const float* logits, std::int32_t id)> observe;
};

struct BatchGenerateResult {
  std::vector<GenerateResult> sequences;  // per prompt: ids, finish_reason, prompt_tokens
  std::int64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_s = 0, decode_s = 0;
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;  // all sequences together
  DecodeSteps steps;
};

// Several prompts at once: prompts are prefilled together (up to max_batch_tokens per forward),
// then every unfinished sequence decodes one token per step in a single forward, so a pipelined
// runner keeps its stages busy. Sequence i samples with seed options.sampling.seed + i. Each
// sequence's ttft_ms and e2e_ms count from the start of the call (all share that start).
BatchGenerateResult generate_batch(Runner& runner, const std::vector<std::vector<std::int32_t>>& prompts,
                                   const GenerateOptions& options);
// The same with per-sequence limits and sampling (InputError when a prompt is empty or does not
// fit the context with its max_tokens).
BatchGenerateResult generate_batch(Runner& runner, const std::vector<SequenceRequest>& sequences,
                                   const std::vector<std::int64_t>& stop_ids);

struct PerplexityResult {
  std::vector<double> nll;  // natural-log NLL of ids[t+1] given ids[..t], t = 0..n-2
  double ppl = 0;           // exp(mean nll)
  std::int64_t n_tokens = 0;  // tokens fed in
  double seconds = 0;
  double tokens_per_s = 0;
};

PerplexityResult perplexity(Runner& runner, std::span<const std::int32_t> ids);
PerplexityResult perplexity(Engine& engine, std::span<const std::int32_t> ids);

}  // namespace plexus
