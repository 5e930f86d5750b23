// Whether a plan fits what its run's devices get, and what to do when it does not: the devices
// over their capacity, the stages' spread-out fallback, and the refusal (exit 2) that gives the
// smallest budgets that run the model.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "planner/planner.h"
#include "planner/sized_tree.h"

namespace plexus {

// Devices whose weights and run buffers exceed their capacity_bytes.
std::vector<const DeviceReport*> overfull(const Plan& plan);

// "X (W weights + B run buffers: KV cache …, scratch …, streaming …)".
std::string need_text(const DeviceReport& d);

// Every module offloaded (cpu if it holds them all, else disk), computed by the first accelerator
// (or the host) through one streaming slot: the smallest run.
Plan smallest_plan(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r);

// One contiguous layer segment per accelerator, each with its own KV cache, its first layers
// resident and the rest streamed from cpu (or disk); the head on the first accelerator that holds
// it, else offloaded. For when the balanced stages cannot hold the run buffers. None when nothing fits.
std::optional<Plan> spread_layer_segments(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r);

// "The smallest budgets that run this model (…) are --max-memory 0=…,cpu=…": the budgets of
// smallest_plan, printed so that they can be pasted back (format_budget).
std::string smallest_budgets_text(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r);

// InputError (exit 2): each overfull device's need and budget, and the smallest budgets.
[[noreturn]] void throw_overfull(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r, const Plan& plan);

}  // namespace plexus
