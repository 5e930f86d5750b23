// Choosing to keep mixture-of-experts layers' experts in host memory (an automatic --n-cpu-moe):
// whether a plan keeps the per-token-read weights on the accelerators, what a decode step moves
// over the slow paths (offloaded modules copied whole, host-kept experts read where they are),
// and the smallest --n-cpu-moe that fits. Pure arithmetic over plans.
#pragma once
#include <functional>
#include <optional>

#include "model/module_tree.h"
#include "planner/planner.h"

namespace plexus {

// Every decoder layer (less the experts the host keeps) and the head resident on an accelerator:
// nothing streams. The embedding may be in host memory (a row lookup per token).
bool fits_accelerators(const ModuleTree& tree, const Plan& plan);

// Bytes one decode step at the plan's --max-sequences moves over the slow paths: every layer and
// head kept off its computing device copied whole (from cpu or disk), plus, of the experts the
// host keeps, those the step's tokens route to (expected_experts_read of E per layer).
double slow_path_bytes_per_step(const ModuleTree& tree, const Plan& plan);

// The smallest N in [1, layers] for which `plan_with(N)` (the plan with --n-cpu-moe N; none when
// it cannot be planned) fits the accelerators — more experts on the host only frees accelerator
// memory, so a binary search; none when N = layers does not fit.
std::optional<int> smallest_fitting_cpu_moe_layers(const ModuleTree& tree, int layers,
                                                   const std::function<std::optional<Plan>(int)>& plan_with);

// --n-cpu-moe N that reproduces the plan's host-kept experts (the last such layer + 1); 0: none.
int n_cpu_moe_of(const Plan& plan);

}  // namespace plexus
