// The planning options shared by `plexus plan`, `generate` and `perplexity`: devices and
// budgets, strategy, dtype, runtime budget, custom device map — read from the command line into
// exec/model_run.h's PlanInputs, which `bench` fills from YAML instead.
#pragma once
#include <string>
#include <vector>

#include "core/args.h"
#include "exec/model_run.h"

namespace plexus::cli {

using plexus::host_available_memory;
using plexus::load_module_tree;
using plexus::PlanOptions;

// What differs between the commands that take the planning flags.
struct PlanFlagChoices {
  // A command that runs the model (generate, perplexity, batch, serve): --dtype offers only the
  // dtypes a run computes in (the checkpoint's own); plan and deploy size int8/int4 too.
  bool runs = false;
  // --max-sequences N, the sequences in flight (docs/cli.md "Batching: one vocabulary"): its
  // default, its help, and the old spellings it accepts silently.
  const char* max_sequences = "1";
  const char* max_sequences_help = "sequences in flight: decoded together, the plan keeping KV-cache room for each";
  std::vector<std::string> max_sequences_old_names = {"--batch"};
};
void add_plan_options(Args& args, const PlanFlagChoices& choices = {});

// The flags as plain values, checked (check_plan_inputs) whether or not the command will plan.
// --device-map naming a strategy (accelerate's "auto", ...) sets the strategy.
PlanInputs plan_inputs_from(const Args& args);

// plan_options_from(plan_inputs_from(args), config).
PlanOptions plan_options_from(const Args& args, const ModelConfig& config);

}  // namespace plexus::cli
