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

// Each accelerator keeps room for the run buffers of a stage (planner/run_buffers.h: workspace,
// activations; the KV cache of the layers it holds; logits with lm_head) plus `extra[ordinal]`
// (the planner raises it for what only the exact sizing sees: streaming slots, more stages).
// A shape with context 0 reserves nothing.
StagePlan plan_stages(const SizedTree& tree, const ModelConfig& config, const Budgets& budgets, const RunShape& shape,
                      const std::vector<std::int64_t>& extra);

}  // namespace plexus
