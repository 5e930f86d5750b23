// Log-probabilities of a chosen token as the OpenAI API reports them: log-softmax of the raw
// logits (before temperature, top-k or top-p), with the top k alternatives.
#pragma once
#include <cstdint>

#include "serve/serve_request.h"

namespace plexus {

// The event of token `id` chosen from `logits` (vocab); with top >= 0 its logprob and the `top`
// most likely ids (best first, the lower id first on ties), else only the id.
TokenEvent token_event(const float* logits, std::int64_t vocab, std::int32_t id, int top);

}  // namespace plexus
