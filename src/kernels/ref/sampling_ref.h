// The oracle of the GPU sampler: one logits row's chosen id (Philox4x32-10 of kernels/philox.h,
// one counter per request token), its logprob and top-N logprobs, computed plainly (sort, doubles).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/philox.h"
#include "kernels/sampling_params.h"

namespace plexus::ref {

struct SampledToken {
  std::int32_t id = 0;
  float logprob = 0;                                // log-softmax of the raw logits at id
  std::vector<std::pair<std::int32_t, float>> top;  // (id, logprob), best first, lower id on ties
};

// The tokens a non-greedy `p` may pick from `logits` (vocab), ascending ids. Filters in the CPU
// sampler's order, on the order (logit desc, id asc): temperature, then top-k (the k first), then
// top-p (the shortest prefix whose probability reaches top_p, at least one token), then min-p
// (probability >= min_p × the largest; the CPU sampler has no min-p). Weights in `w` (same
// length): exp((logit - max) / temperature).
std::vector<std::int32_t> kept_tokens(const float* logits, std::int64_t vocab, const SamplingParams& p,
                                      std::vector<double>* w);

// Row `logits` (vocab) sampled with `p` for token `step` of request `seed`, with `top_n`
// (0..kMaxTopLogprobs) top logprobs. Greedy: the largest logit, the first on ties (the CPU
// sampler's argmax). Otherwise u = philox_uniform(seed, step) picks, in ascending id order over
// kept_tokens, the first token whose running weight exceeds u × their total.
// Differences from the CPU sampler (runtime/sampler.cpp): its draws come from mt19937_64 and its
// running sum goes in (logit desc) order, so the same seed picks other tokens; the distribution
// is the same. Its top-p compares the running probability cum/total with top_p, ours the
// running weight with top_p × total (equal up to rounding).
SampledToken sample_row(const float* logits, std::int64_t vocab, const SamplingParams& p, std::uint64_t seed,
                        std::uint64_t step, int top_n);

// sample_row over the rows of logits (n, vocab), row r with params[r], seeds[r], steps[r]: the
// host form of the GPU kernel's launch. Each row's result depends on that row's inputs only.
std::vector<SampledToken> sample_rows(const float* logits, std::int64_t n, std::int64_t vocab,
                                      const SamplingParams* params, const std::uint64_t* seeds,
                                      const std::uint64_t* steps, int top_n);

}  // namespace plexus::ref
