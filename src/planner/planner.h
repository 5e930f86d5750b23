// The planner: a pure function from (ModuleTree, devices with budgets, strategy, dtype, runtime
// budget) to a DeviceMap and a per-device report. No device calls; budgets come in as values.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/module_tree.h"
#include "planner/budgets.h"
#include "planner/device_map.h"
#include "planner/weight_dtype.h"

namespace plexus {

// sequential, balanced, balanced_low_0 and auto reproduce accelerate / transformers'
// from_pretrained(device_map=…); stages is plexus's own (docs/planner.md).
enum class Strategy { kSequential, kBalanced, kBalancedLow0, kAuto, kStages };

std::string_view strategy_name(Strategy s);
bool parse_strategy(std::string_view text, Strategy* out);
Strategy parse_strategy_or_throw(std::string_view text);
bool is_accelerate_strategy(Strategy s);

// What must fit beside the weights at run time. Zero context means "weights only".
struct RuntimeBudget {
  std::int64_t context = 0;  // tokens of KV cache kept per sequence
  std::int64_t batch = 1;    // sequences decoded together
  std::int64_t prefill_chunk = 512;  // prompt tokens per forward pass: bounds the activations
};

struct PlanRequest {
  Strategy strategy = Strategy::kStages;
  WeightDType dtype = WeightDType::kBF16;
  Budgets budgets;                // accelerators, "cpu"; disk is always allowed after them
  bool budgets_from_user = true;  // false: detected free memory (accelerate then keeps 10% of a lone GPU)
  // Disk offload for the stages strategy and custom maps (accelerate's strategies always have it,
  // as accelerate does). Without it a model that does not fit is an error with the numbers.
  bool allow_disk = false;
  RuntimeBudget runtime;
  // The dtype is the checkpoint's, fixed for a run: "does not fit" advice offers no other dtype.
  bool dtype_fixed = false;
};

struct DeviceReport {
  DeviceId device = DeviceId::disk();
  std::optional<std::uint64_t> budget_bytes;  // the budget the strategy planned against; none for disk
  std::int64_t weights_bytes = 0;             // tied storage counted once per device holding it
  std::int64_t kv_cache_bytes = 0;            // for the decoder layers placed here
  std::int64_t activation_bytes = 0;          // workspace reserved here (stages strategy)
  // Bytes read per generated token: weights and KV cache, the embedding counting as a row
  // lookup (0) unless a tied lm_head here reads the whole matrix. The stages strategy
  // minimises the largest of these over the accelerators.
  std::int64_t read_bytes_per_token = 0;
  std::vector<int> layers;                    // decoder layer indices placed here
  bool holds_embedding = false, holds_lm_head = false;
};

struct Plan {
  Strategy strategy = Strategy::kStages;
  bool custom = false;  // from --device-map rather than a strategy
  WeightDType dtype = WeightDType::kBF16;
  DeviceMap device_map;
  std::vector<DeviceMap::Entry> placement;  // every parameter name, tied ones under each name
  std::vector<DeviceReport> devices;        // budgeted devices in order, then disk when used
  Budgets planned_budgets;                  // after accelerate's balancing, for accelerate strategies
  RuntimeBudget runtime;
  std::int64_t model_bytes = 0;
  std::vector<std::string> notes;           // explanations worth printing
};

// Plans with the request's strategy. Throws RuntimeError with the numbers and the way out when
// the weights cannot be placed at all (no budget anywhere), InputError on an empty request.
Plan plan_model(const ModuleTree& tree, const PlanRequest& request);

// Takes a custom map (`--device-map FILE.json`), checks it and reports it: every parameter
// covered by exactly one entry, every entry naming a module of the model, every device budgeted
// (or disk), every budget respected. InputError saying which, otherwise.
Plan plan_from_device_map(const ModuleTree& tree, const DeviceMap& map, const PlanRequest& request);

class SizedTree;
// Fills placement and devices for a map (shared by the strategies and the custom-map path).
void fill_report(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& request, Plan* plan);

}  // namespace plexus
