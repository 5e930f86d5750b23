// `--strategy fastest`: plans every strategy on every subset of the budgeted accelerators (all
// subsets up to 4 accelerators, prefixes beyond), predicts each with the cost model and ranks
// them by an objective — decode throughput at --batch, one sequence's decode speed (latency), or
// joules per token (energy). A mixture of experts whose cpu budget can hold experts also gets
// plans keeping them on the host (--n-cpu-moe N: the smallest N that fits the rest on the
// accelerators, and every layer) beside stages' plain offload of whole layers.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "exec/plan_facts.h"
#include "planner/cost_model.h"
#include "planner/planner.h"

namespace plexus {

enum class Objective { kThroughput, kLatency, kEnergy };
std::string_view objective_name(Objective o);
// InputError naming --objective and the choices.
Objective parse_objective(const std::string& text);

struct Candidate {
  Plan plan;
  Prediction predicted;
  std::string label;  // "stages on 0,1", "stages on 0 with --n-cpu-moe 12" (the experts of the first 12 layers on the host)
  double score = 0;   // higher is better
};

struct FastestChoice {
  Objective objective = Objective::kThroughput;
  std::vector<Candidate> ranked;       // best first; plans that fit only
  std::vector<std::string> refused;    // "sequential on 1: <why>"
  std::string facts_note;
};

// InputError when no strategy on no subset gives a plan (with the first refusal's reason).
// `detected`: the GPUs the budgets came from, predicted by their names (exec/plan_facts.h).
FastestChoice choose_fastest(const ModuleTree& tree, const PlanRequest& base, Objective objective,
                             const std::optional<std::string>& gpu, const Inventory* detected = nullptr);

Json fastest_to_json(const FastestChoice& c);
// The runner-ups for the text report: plans predicted alike share a line (ranked, at most
// `max_lines` lines).
std::string runner_ups_to_text(const FastestChoice& c, std::size_t max_lines = 6);

}  // namespace plexus
