// What a replica does with the requests it holds: one generate_batch over all of them (each
// choice of each with its own limits, seed and grammar), falling back to one request at a time when the batch fails so
// a bad request does not take good ones down with it. Tasks and outcomes are plain values that
// also travel between MPI ranks as JSON.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "batch/fault_injection.h"
#include "batch/replica_grammars.h"
#include "core/json.h"
#include "runtime/generate.h"
#include "runtime/runner.h"
#include "serve/serve_request.h"

namespace plexus::batch {

struct Task {
  std::size_t index = 0;  // into the coordinator's request list
  std::string key;        // the request id as JSON text
  SequenceRequest seq;    // seq.constraint unused: the replica makes one per choice from `grammar`
  int choices = 1;        // "n": choice i samples with choice_seed(seq.sampling.seed, i), as serve's
  int top_logprobs = -1;  // -1: none; k >= 0: each token's log-probability and the top k (serve's token_event)
  std::string grammar, grammar_source;  // structured output: what every choice must match; "" none
};

// One choice's generation.
struct ChoiceOutcome {
  std::vector<std::int32_t> ids;  // (completion_tokens)
  std::string finish_reason;      // "stop" | "length"
  std::vector<TokenEvent> logprobs;  // with Task::top_logprobs >= 0: one per id, from its raw logits
};

struct Outcome {
  std::size_t index = 0;
  int replica = 0;
  bool ok = false;
  bool permanent = false;  // failed and retrying cannot help
  std::string error;
  std::vector<ChoiceOutcome> choices;  // in index order (Task::choices of them when ok)
  std::int64_t prompt_tokens = 0;
  double latency_ms = 0;  // from the start of the request's run on the replica to its result
};

Json task_to_json(const Task& task);
Task task_from_json(const Json& j);
Json outcome_to_json(const Outcome& outcome);
Outcome outcome_from_json(const Json& j);

// Runs `tasks` on `runner` as replica `replica`, generating together as many as hold at most
// `max_sequences` choices in all (a task of more runs alone); grammars compiled through
// `grammars`. One outcome per task, in order. Never throws for a failing request: the failure is
// in its outcome (a grammar that does not compile fails its request for good).
std::vector<Outcome> run_tasks(Runner& runner, int replica, const std::vector<Task>& tasks,
                               const std::vector<std::int64_t>& stop_ids, ReplicaGrammars& grammars,
                               std::size_t max_sequences, const FaultInjection& faults);

}  // namespace plexus::batch
