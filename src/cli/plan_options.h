// The planning options shared by `plexus plan`, `generate` and `perplexity`: devices and
// budgets, strategy, dtype, runtime budget, custom device map — read from the command line into
// exec/model_run.h's PlanInputs, which `bench` fills from YAML instead.
#pragma once
#include "core/args.h"
#include "exec/model_run.h"

namespace plexus::cli {

using plexus::host_available_memory;
using plexus::load_module_tree;
using plexus::PlanOptions;

void add_plan_options(Args& args);

// The flags as plain values, checked (check_plan_inputs) whether or not the command will plan.
// --device-map naming a strategy (accelerate's "auto", ...) sets the strategy.
PlanInputs plan_inputs_from(const Args& args);

// plan_options_from(plan_inputs_from(args), config).
PlanOptions plan_options_from(const Args& args, const ModelConfig& config);

}  // namespace plexus::cli
