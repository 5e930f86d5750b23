// Hugging Face accelerate's placement, reproduced: get_balanced_memory (budgets that spread the
// model over the accelerators) then infer_auto_device_map (greedy fill in module order, keeping
// room for the largest layer on the main devices, cpu then disk as fallbacks) then clean-up.
#pragma once
#include <string>
#include <vector>

#include "planner/budgets.h"
#include "planner/device_map.h"
#include "planner/sized_tree.h"

namespace plexus {

// get_balanced_memory: caps every accelerator but the last at total/n plus a margin (1.25 × the
// larger of one decoder layer and the mean leaf module); with `low_zero` device 0 gets only what
// the others cannot hold. `user_set` false means the budgets were detected: a lone accelerator then
// keeps 10% back, as accelerate does.
Budgets accelerate_balanced_memory(const SizedTree& tree, const Budgets& max_memory, bool low_zero,
                                   bool user_set = true);

// infer_auto_device_map followed by clean_device_map. Disk is always available after the
// budgeted devices. `trace`, when given, receives one line per decision.
DeviceMap accelerate_infer_device_map(const SizedTree& tree, const Budgets& max_memory,
                                      std::vector<std::string>* trace = nullptr);

// Groups every module whose submodules all share one device into a single entry, recursively.
DeviceMap accelerate_clean_device_map(const DeviceMap& map);

}  // namespace plexus
