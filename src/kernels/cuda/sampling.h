// Sampling on the GPU: one launch picks the next token of every logits row (greedy, temperature,
// top-k, top-p, min-p, seeded per request by Philox4x32-10) and its logprobs, so only the ids
// and the asked-for logprobs cross to the host. Plain C++ header; pointers are device memory.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/sampling_params.h"

namespace plexus::cuda {

// For each row r of logits (n, vocab) f32 (finite), with params[r], seeds[r] and steps[r] (the
// request's seed and its token index; each (n)):
//   ids[r]      (n)     the token kernels/ref's sample_row picks (same filters, same Philox
//                       uniform, the same inverse-CDF walk in ascending id order);
//   logprobs[r] (n)     its log-softmax of the raw logits;
//   top_ids, top_logprobs (n, top_n), when top_n > 0: the top_n largest logits (lower id first
//                       on ties) and their logprobs; top_n in [0, kMaxTopLogprobs], vocab >= top_n.
// One block per row; a row's result depends on that row's inputs only, not on what shares the
// batch. Top-k and top-p sets are found without sorting: each is a prefix of the row in the
// order (logit desc, id asc), so a bisection over the logits' ordered bit patterns, then over
// ids among the tied logits, finds its last token (kernels/sampling_prefix.h: 32 + about
// log2(vocab) passes over the row, an exp only for the tokens inside the key window; greedy
// rows make 2 + top_n passes). Weights and sums in double, as the ref.
// n == 0 is a no-op; asynchronous on `stream` (the caller checks cudaGetLastError).
void launch_sample(const float* logits, std::int64_t n, std::int64_t vocab, const SamplingParams* params,
                   const std::uint64_t* seeds, const std::uint64_t* steps, std::int32_t* ids, float* logprobs,
                   int top_n, std::int32_t* top_ids, float* top_logprobs, cudaStream_t stream);

}  // namespace plexus::cuda
