// A replica's batch of requests through generate_batch, with per-request failure isolation.
#include "batch/replica_worker.h"

#include <algorithm>

#include "core/error.h"
#include "serve/logprobs.h"

namespace plexus::batch {

// A tripwire: the task's JSON (what MPI workers run) carries each field of SamplingOptions by
// name. A field added there must be added to task_to_json and task_from_json, then here.
static_assert(sizeof(SamplingOptions) == 12 * 8, "SamplingOptions changed: carry its new field in the task's JSON");

Json task_to_json(const Task& t) {
  const SamplingOptions& s = t.seq.sampling;
  Json j = {{"index", t.index},         {"key", t.key},         {"prompt", t.seq.prompt},
            {"max_tokens", t.seq.max_tokens}, {"greedy", s.greedy}, {"temperature", s.temperature},
            {"top_k", s.top_k},         {"top_p", s.top_p},     {"seed", s.seed},
            {"min_p", s.min_p},         {"presence_penalty", s.presence_penalty},
            {"frequency_penalty", s.frequency_penalty}, {"repetition_penalty", s.repetition_penalty}};
  Json bias = Json::array();
  for (const auto& [id, b] : s.logit_bias) bias.push_back({id, b});
  j["logit_bias"] = bias;
  if (t.seq.stop_ids) j["stop_ids"] = *t.seq.stop_ids;
  j["choices"] = t.choices;
  j["top_logprobs"] = t.top_logprobs;
  if (!t.grammar.empty()) j["grammar"] = {{"text", t.grammar}, {"source", t.grammar_source}};
  return j;
}

Task task_from_json(const Json& j) {
  Task t;
  t.index = j.at("index").get<std::size_t>();
  t.key = j.at("key").get<std::string>();
  t.seq.prompt = j.at("prompt").get<std::vector<std::int32_t>>();
  t.seq.max_tokens = j.at("max_tokens").get<std::int64_t>();
  t.seq.sampling.greedy = j.at("greedy").get<bool>();
  t.seq.sampling.temperature = j.at("temperature").get<double>();
  t.seq.sampling.top_k = j.at("top_k").get<std::int64_t>();
  t.seq.sampling.top_p = j.at("top_p").get<double>();
  t.seq.sampling.seed = j.at("seed").get<std::uint64_t>();
  t.seq.sampling.min_p = j.at("min_p").get<double>();
  t.seq.sampling.presence_penalty = j.at("presence_penalty").get<double>();
  t.seq.sampling.frequency_penalty = j.at("frequency_penalty").get<double>();
  t.seq.sampling.repetition_penalty = j.at("repetition_penalty").get<double>();
  for (const Json& b : j.at("logit_bias")) t.seq.sampling.logit_bias.emplace_back(b.at(0).get<std::int32_t>(), b.at(1).get<float>());
  if (j.contains("stop_ids")) t.seq.stop_ids = j["stop_ids"].get<std::vector<std::int64_t>>();
  t.choices = j.at("choices").get<int>();
  t.top_logprobs = j.at("top_logprobs").get<int>();
  if (j.contains("grammar")) {
    t.grammar = j["grammar"].at("text").get<std::string>();
    t.grammar_source = j["grammar"].at("source").get<std::string>();
  }
  return t;
}

Json outcome_to_json(const Outcome& o) {
  Json choices = Json::array();
  for (const ChoiceOutcome& c : o.choices) {
    Json logprobs = Json::array();  // [id, logprob, [[id, logprob], ...]] per token
    for (const TokenEvent& e : c.logprobs) logprobs.push_back({e.id, e.logprob.value_or(0.0f), e.top});
    choices.push_back({{"ids", c.ids}, {"finish_reason", c.finish_reason}, {"logprobs", logprobs}});
  }
  return {{"index", o.index},   {"replica", o.replica},         {"ok", o.ok},
          {"permanent", o.permanent}, {"error", o.error},       {"choices", choices},
          {"prompt_tokens", o.prompt_tokens}, {"latency_ms", o.latency_ms}};
}

Outcome outcome_from_json(const Json& j) {
  Outcome o;
  o.index = j.at("index").get<std::size_t>();
  o.replica = j.at("replica").get<int>();
  o.ok = j.at("ok").get<bool>();
  o.permanent = j.at("permanent").get<bool>();
  o.error = j.at("error").get<std::string>();
  for (const Json& c : j.at("choices")) {
    ChoiceOutcome& choice = o.choices.emplace_back();
    choice.ids = c.at("ids").get<std::vector<std::int32_t>>();
    choice.finish_reason = c.at("finish_reason").get<std::string>();
    for (const Json& e : c.at("logprobs")) {
      TokenEvent& event = choice.logprobs.emplace_back();
      event.id = e.at(0).get<std::int32_t>();
      event.logprob = e.at(1).get<float>();
      event.top = e.at(2).get<std::vector<std::pair<std::int32_t, float>>>();
    }
  }
  o.prompt_tokens = j.at("prompt_tokens").get<std::int64_t>();
  o.latency_ms = j.at("latency_ms").get<double>();
  return o;
}

namespace {

// Throws when an injected fault applies to this run.
void check_faults(int replica, const std::vector<Task>& tasks, const FaultInjection& faults) {
  if (faults.replicas.count(replica)) {
    throw RuntimeError("injected fault: replica " + std::to_string(replica) + " (PLEXUS_BATCH_FAIL)");
  }
  for (const Task& t : tasks) {
    if (faults.ids.count(fault_id_text(t.key))) throw RuntimeError("injected fault: request " + t.key + " (PLEXUS_BATCH_FAIL)");
  }
}

// Every choice of every task in one generate_batch.
std::vector<Outcome> run_together(Runner& runner, int replica, const std::vector<Task>& tasks,
                                  const std::vector<std::int64_t>& stop_ids, ReplicaGrammars& grammars,
                                  const FaultInjection& faults) {
  check_faults(replica, tasks, faults);
  std::size_t total = 0;
  for (const Task& t : tasks) total += static_cast<std::size_t>(t.choices);
  std::vector<std::vector<TokenEvent>> events(total);  // per sequence, with log-probabilities asked for
  std::vector<SequenceRequest> seqs;
  const std::int64_t vocab = runner.vocab_size();
  for (const Task& t : tasks) {
    for (int i = 0; i < t.choices; ++i) {
      SequenceRequest s = t.seq;
      s.sampling.seed = choice_seed(t.seq.sampling.seed, i);
      if (!t.grammar.empty()) s.constraint = grammars.constraint(t.grammar, t.grammar_source);
      if (t.top_logprobs >= 0) {
        s.observe = [out = &events[seqs.size()], vocab, k = t.top_logprobs](const float* logits, std::int32_t id) {
          out->push_back(token_event(logits, vocab, id, k));  // serve's log-probabilities of the raw logits
        };
      }
      seqs.push_back(std::move(s));
    }
  }
  const BatchGenerateResult r = generate_batch(runner, seqs, stop_ids);
  std::vector<Outcome> out(tasks.size());
  std::size_t next = 0;  // the first sequence of task i
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    Outcome& o = out[i];
    o.index = tasks[i].index;
    o.replica = replica;
    o.ok = true;
    for (int c = 0; c < tasks[i].choices; ++c, ++next) {
      const GenerateResult& g = r.sequences[next];
      o.choices.push_back({g.ids, g.finish_reason, std::move(events[next])});
      o.prompt_tokens = g.prompt_tokens;
      o.latency_ms = std::max(o.latency_ms, g.e2e_ms);
    }
  }
  return out;
}

Outcome failure(const Task& task, int replica, const std::string& error, bool permanent) {
  Outcome o;
  o.index = task.index;
  o.replica = replica;
  o.error = error;
  o.permanent = permanent;
  return o;
}

// One generate_batch of `tasks`; when it fails, each task alone, so only those that fail are blamed.
std::vector<Outcome> run_group(Runner& runner, int replica, const std::vector<Task>& tasks,
                               const std::vector<std::int64_t>& stop_ids, ReplicaGrammars& grammars,
                               const FaultInjection& faults) {
  try {
    return run_together(runner, replica, tasks, stop_ids, grammars, faults);
  } catch (const std::exception& e) {
    if (tasks.size() == 1) {
      // A bad request (InputError: e.g. too long for this runner, a grammar that does not
      // compile) fails the same everywhere.
      return {failure(tasks[0], replica, e.what(), dynamic_cast<const InputError*>(&e) != nullptr)};
    }
  }
  std::vector<Outcome> out;
  for (const Task& t : tasks) out.push_back(run_group(runner, replica, {t}, stop_ids, grammars, faults).front());
  return out;
}

}  // namespace

std::vector<Outcome> run_tasks(Runner& runner, int replica, const std::vector<Task>& tasks,
                               const std::vector<std::int64_t>& stop_ids, ReplicaGrammars& grammars,
                               std::size_t max_sequences, const FaultInjection& faults) {
  std::vector<Outcome> out;
  std::vector<Task> group;
  std::size_t sequences = 0;  // choices in `group`
  auto flush = [&] {
    if (group.empty()) return;
    for (Outcome& o : run_group(runner, replica, group, stop_ids, grammars, faults)) out.push_back(std::move(o));
    group.clear();
    sequences = 0;
  };
  for (const Task& t : tasks) {
    const auto choices = static_cast<std::size_t>(std::max(t.choices, 1));
    if (!group.empty() && sequences + choices > max_sequences) flush();
    group.push_back(t);
    sequences += choices;
  }
  flush();
  return out;
}

}  // namespace plexus::batch
