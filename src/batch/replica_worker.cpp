// A replica's batch of requests through generate_batch, with per-request failure isolation.
#include "batch/replica_worker.h"

#include "core/error.h"

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
  return t;
}

Json outcome_to_json(const Outcome& o) {
  return {{"index", o.index},   {"replica", o.replica},         {"ok", o.ok},
          {"permanent", o.permanent}, {"error", o.error},       {"ids", o.ids},
          {"finish_reason", o.finish_reason}, {"prompt_tokens", o.prompt_tokens}, {"latency_ms", o.latency_ms}};
}

Outcome outcome_from_json(const Json& j) {
  Outcome o;
  o.index = j.at("index").get<std::size_t>();
  o.replica = j.at("replica").get<int>();
  o.ok = j.at("ok").get<bool>();
  o.permanent = j.at("permanent").get<bool>();
  o.error = j.at("error").get<std::string>();
  o.ids = j.at("ids").get<std::vector<std::int32_t>>();
  o.finish_reason = j.at("finish_reason").get<std::string>();
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

std::vector<Outcome> run_together(Runner& runner, int replica, const std::vector<Task>& tasks,
                                  const std::vector<std::int64_t>& stop_ids, const FaultInjection& faults) {
  check_faults(replica, tasks, faults);
  std::vector<SequenceRequest> seqs;
  for (const Task& t : tasks) seqs.push_back(t.seq);
  const BatchGenerateResult r = generate_batch(runner, seqs, stop_ids);
  std::vector<Outcome> out(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const GenerateResult& g = r.sequences[i];
    Outcome& o = out[i];
    o.index = tasks[i].index;
    o.replica = replica;
    o.ok = true;
    o.ids = g.ids;
    o.finish_reason = g.finish_reason;
    o.prompt_tokens = g.prompt_tokens;
    o.latency_ms = g.e2e_ms;
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

}  // namespace

std::vector<Outcome> run_tasks(Runner& runner, int replica, const std::vector<Task>& tasks,
                               const std::vector<std::int64_t>& stop_ids, const FaultInjection& faults) {
  if (tasks.empty()) return {};
  try {
    return run_together(runner, replica, tasks, stop_ids, faults);
  } catch (const std::exception& e) {
    if (tasks.size() == 1) {
      // A bad request (InputError: e.g. too long for this runner) fails the same everywhere.
      return {failure(tasks[0], replica, e.what(), dynamic_cast<const InputError*>(&e) != nullptr)};
    }
  }
  // The batch failed: run each request alone so only the ones that fail are blamed.
  std::vector<Outcome> out;
  for (const Task& t : tasks) out.push_back(run_tasks(runner, replica, {t}, stop_ids, faults).front());
  return out;
}

}  // namespace plexus::batch
