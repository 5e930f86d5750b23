// One generation request as the scheduler (serve/scheduler.h) sees it, and what it sends back:
// tokens as they are chosen (with their log-probabilities when asked), then one finish event
// with the request's counts, time and energy. Text, stop strings and the HTTP shapes are the
// API layer's (serve/openai_api.h); the scheduler deals in token ids.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/token_constraint.h"

namespace plexus {

// Prompt positions that get logits rows in one step at most, over all the requests asking for
// prompt log-probabilities: their prefill chunks are cut to this (the logits buffer holds a row
// per such token).
inline constexpr std::int64_t kPromptLogprobRows = 64;

struct ServeRequest {
  std::vector<std::int32_t> prompt;  // (n) token ids, n >= 1
  std::int64_t max_tokens = 16;      // tokens to generate at most, per choice; 0: the prompt's prefill only
                                     // (with prompt_logprobs: the prompt scored), ending kLength
  SamplingOptions sampling;          // greedy or seeded sampling: output depends on nothing else
  std::vector<std::int64_t> stop_ids;  // end of sequence ids: generation stops after one (not sent as text)
  int top_logprobs = -1;               // -1: no log-probabilities; k >= 0: the chosen token's and the top k
  // -1: none; k >= 0: the log-probabilities of the prompt's tokens (from the second: the first
  // has no context) and the top k at each, computed during the prefill (every prompt position
  // gets a logits row, so the prompt goes through in chunks of at most kPromptLogprobRows) and
  // sent as TokenEvents with prompt_position set, before the first generated token.
  int prompt_logprobs = -1;
  // Choices generated from the prompt (the API's "n"): the prompt is prefilled once and its KV
  // cache copied into each other choice's sequence. Choice i samples with choice_seed(seed, i).
  int choices = 1;
  // Structured output: makes each choice's own constraint (called once per choice when the request
  // is submitted), which masks its logits at every step; null: none.
  std::function<std::unique_ptr<TokenConstraint>()> constraint;
  // When the request had arrived whole (HttpRequest::received): its time to first token, queue
  // time and duration count from here, as its client's do. Unset: from submit().
  std::chrono::steady_clock::time_point arrived{};
};

// The seed of choice `index` of a request seeded `seed`: the seed itself for choice 0 (a request
// of one choice is unchanged), a different one for each other choice.
std::uint64_t choice_seed(std::uint64_t seed, int index);

// Why a request ended, as the OpenAI API names it ("stop", "length"), or ours: "cancelled" (the
// client went away, or the API layer matched a stop string and cancelled), "error" (a forward failed).
enum class FinishReason { kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason reason);

struct TokenEvent {
  int index = 0;  // the choice
  std::int32_t id = 0;
  std::int64_t prompt_position = -1;  // >= 1: the prompt's token at this position (prompt_logprobs), not a generated one
  std::optional<float> logprob;                           // with ServeRequest::top_logprobs >= 0
  std::vector<std::pair<std::int32_t, float>> top;        // (id, logprob), best first, top_logprobs of them
};

// One per choice; the stream ends after every choice's.
struct FinishEvent {
  int index = 0;  // the choice
  FinishReason reason = FinishReason::kStop;
  std::string error;  // kError: what failed
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
  double time_s = 0;    // from arrival (ServeRequest::arrived) to the last token
  double ttft_s = 0;    // from arrival (ServeRequest::arrived) to the first token (0 when none)
  double queue_s = 0;   // from arrival (ServeRequest::arrived) to admission into the running batch
  std::optional<double> energy_j;  // its share of the measured device energy (serve/energy_ledger.h); nullopt: no energy source
};

}  // namespace plexus
