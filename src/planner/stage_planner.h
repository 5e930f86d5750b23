// plexus's own strategy, "stages": contiguous pipeline stages in layer order over every
// accelerator, minimising the largest per-device load (weights + KV cache) within budgets that
// keep room for activations; cpu and disk only take what the accelerators cannot.
#pragma once
#include <string>
#include <vector>

#include "planner/budgets.h"
#include "planner/device_map.h"
#include "planner/planner.h"
#include "planner/sized_tree.h"

namespace plexus {

struct StagePlan {
  DeviceMap map;
  std::vector<std::string> notes;
};

StagePlan plan_stages(const SizedTree& tree, const ModelConfig& config, const Budgets& budgets,
                      const RuntimeBudget& runtime);

}  // namespace plexus
