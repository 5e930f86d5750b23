// What every device of a tensor × pipeline parallel run holds: the plan is one tensor-parallel
// rank's (made on its shard of the model, one device per pipeline stage); tp rank r of stage s
// is the run's device s·tp + r and holds rank r's shard of the stage's layers.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "model/module_tree.h"
#include "planner/planner.h"

namespace plexus {

struct ParallelDevice {
  DeviceId device = DeviceId::cpu();  // the run's accelerator (s·tp + r), or cpu / disk summed over the ranks
  std::optional<int> tp_rank, pp_stage;  // none for cpu and disk
  // --ep: the experts [first, first + count) of each mixture layer this rank holds whole.
  std::optional<std::pair<std::int64_t, std::int64_t>> experts;
  // The device's own budget (the plan gives every rank of a stage its smallest device's budget).
  std::optional<std::uint64_t> budget_bytes;
  // Rank r's weights and run buffers here: DeviceReport of rank r's shard placed by the plan's
  // map (its `device` is the plan's, i.e. the stage, or cpu / disk).
  DeviceReport report;
};

struct ParallelPlan {
  int tp = 1, pp = 1;
  std::int64_t experts = 0;             // --ep: the experts of a mixture layer, 1/tp of them whole on each rank; else 0
  std::vector<ParallelDevice> devices;  // accelerators in run order (0 … tp·pp − 1), then cpu, disk
  std::int64_t weights_bytes = 0;       // summed over every device: the split weights once, the replicated tp times
};

// The devices of a run of `plan` (one rank's, made on shard_module_tree(full, {0, tp}) with
// `request`) over tp ranks per stage: each rank's shard placed by the plan's device map and sized
// as the planner sizes a device (fill_report). `run_budgets`: the run's own budgets, every one of
// its tp × pp accelerators (group_budgets made the plan's from them); may be empty. whole_experts:
// the ranks' shards hold whole experts (--ep, TensorSplit::whole_experts). InputError when tp
// cannot split the model (shard_config).
ParallelPlan parallel_plan(const ModuleTree& full, const Plan& plan, const PlanRequest& request, int tp, int pp,
                           const Budgets& run_budgets, bool whole_experts = false);

// {"device", "tp_rank", "pp_stage", "budget_bytes", ("experts": {"first", "count"} under --ep), "weights_bytes", "kv_cache_bytes",
// "activation_bytes", "streaming_bytes", "run_buffers_bytes", "total_bytes", "layers",
// "embedding", "lm_head"} per device.
Json parallel_devices_to_json(const ParallelPlan& p);
// A table of the tp × pp devices (and cpu / disk when used).
std::string parallel_plan_to_table(const ParallelPlan& p);

}  // namespace plexus
