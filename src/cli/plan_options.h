// The planning options shared by `plexus plan` (and later generate/perplexity): devices and
// budgets, strategy, dtype, runtime budget, custom device map; and loading a model's ModuleTree.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/args.h"
#include "model/module_tree.h"
#include "planner/planner.h"

namespace plexus::cli {

void add_plan_options(Args& args);

struct PlanOptions {
  PlanRequest request;
  std::optional<std::string> device_map_file;
  std::string budgets_source;  // where the budgets came from, for the report
};

// Builds the request. Without --max-memory, budgets are the detected accelerators' free memory
// and the host's available memory (today: no GPU backend, so the host only), or with
// --virtual-devices N, N accelerators sharing the host's available memory equally.
PlanOptions plan_options_from(const Args& args, const ModelConfig& config);

// MODEL is a directory (config.json [+ safetensors, whose headers give real shapes]) or a
// config.json file.
ModuleTree load_module_tree(const std::string& model);

// MemAvailable from /proc/meminfo, in bytes; RuntimeError when unreadable.
std::uint64_t host_available_memory();

}  // namespace plexus::cli
