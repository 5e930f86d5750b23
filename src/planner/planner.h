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
#include "planner/run_buffers.h"
#include "planner/weight_dtype.h"

namespace plexus {

// sequential, balanced, balanced_low_0 and auto reproduce accelerate / transformers'
// from_pretrained(device_map=…); stages is plexus's own (docs/planner.md).
enum class Strategy { kSequential, kBalanced, kBalancedLow0, kAuto, kStages };

std::string_view strategy_name(Strategy s);
bool parse_strategy(std::string_view text, Strategy* out);
Strategy parse_strategy_or_throw(std::string_view text);
bool is_accelerate_strategy(Strategy s);

// What must fit beside the weights at run time (planner/run_buffers.h sizes it). Zero context
// means "weights only": no run buffers are planned (and such a plan cannot be run).
struct RuntimeBudget {
  std::int64_t context = 0;          // tokens of KV cache kept per sequence
  std::int64_t batch = 1;            // sequences decoded together
  std::int64_t prefill_chunk = 256;  // tokens per forward pass (--batch-tokens): bounds the activations
  int threads = 1;                   // threads of the run, split over the accelerators as the run splits them
  // Device scratch of each computing accelerator's kernels (CUDA: the cuBLAS workspace, attention
  // partials); 0 for CPU devices. The caller that knows the devices fills it (exec/model_run).
  std::int64_t accelerator_kernel_scratch = 0;
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
  // --n-cpu-moe N (--cpu-moe: every layer): the experts of the mixture-of-experts layers among
  // the first N stay in host memory ("cpu", counted against its budget when there is one) and
  // are computed there; the rest of the model is planned without them. 0: none.
  int cpu_moe_layers = 0;
  // Without --n-cpu-moe, the stages strategy may keep the experts of the first N mixture-of-experts
  // layers in host memory by itself (an automatic --n-cpu-moe N): when the model does not fit the
  // accelerators, a cpu budget holds them, and a decode step then moves fewer bytes over the slow
  // paths than offloading whole layers does (docs/planner.md "Mixtures of experts"); `--strategy
  // fastest` ranks plans with host-kept experts too. False where the run's accelerators cannot
  // compute such layers (CUDA GPUs, for now: exec/weight_store refuses them), and for --tp/--pp.
  bool auto_host_experts = true;
};

struct DeviceReport {
  DeviceId device = DeviceId::disk();
  std::optional<std::uint64_t> budget_bytes;  // the budget the strategy planned against; none for disk
  std::int64_t weights_bytes = 0;             // tied storage counted once per device holding it
  // Run buffers (planner/run_buffers.h) of the stages computed here: KV cache for the layers
  // computed here (offloaded ones included), scratch (workspace, activations, a chunk of logits),
  // weight-streaming slots.
  std::int64_t kv_cache_bytes = 0;
  std::int64_t activation_bytes = 0;          // scratch: workspace, activations, logits chunk, alignment
  std::int64_t streaming_bytes = 0;
  int streaming_slots = 0;                    // layer slots: 2, or 1 where two do not fit
  std::int64_t run_buffers_bytes = 0;         // kv_cache + activation + streaming
  std::int64_t total_bytes = 0;               // weights + run buffers
  // What the run's device must hold: the budget, except for accelerate's strategies with
  // budgets given by the user, whose max_memory limits the weights only (the run buffers come
  // on top, as with transformers): then max(budget, total). None for disk.
  std::optional<std::uint64_t> capacity_bytes;
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
  DeviceMap device_map;                     // in the engine's module names, as the run reads it
  // accelerate's map in the checkpoint's Hugging Face names where they differ from the engine's
  // (GPT-2: transformer.wte, transformer.h.N, …; planner/gpt2_device_map.h): what plan prints.
  std::optional<DeviceMap> hf_device_map;
  std::vector<DeviceMap::Entry> placement;  // every parameter name, tied ones under each name
  std::vector<DeviceReport> devices;        // budgeted devices in order, then disk when used
  Budgets planned_budgets;                  // after accelerate's balancing, for accelerate strategies
  RuntimeBudget runtime;                    // context clamped to max_position_embeddings
  std::int64_t model_bytes = 0;
  // Parameters (tied once), those one token reads (planner/moe_reads.h: all but the E − k unused
  // experts of each mixture-of-experts layer; the total for a dense model), and their bytes.
  std::int64_t parameters = 0, active_parameters = 0, active_bytes = 0;
  // The mixture-of-experts layers whose experts stay in host memory, computed there (--n-cpu-moe).
  std::vector<int> host_expert_layers;
  std::vector<std::string> notes;           // explanations worth printing
};

// Plans with the request's strategy (request.cpu_moe_layers: the experts kept on "cpu" first,
// the device map naming them apart from their layers). Every plan it returns fits: each device's weights and run
// buffers within what the run will give it (DeviceReport::capacity_bytes). Budgets that cannot
// hold any plan are an InputError (exit 2) giving the smallest budget that would work.
Plan plan_model(const ModuleTree& tree, const PlanRequest& request);

// The smallest N for which --n-cpu-moe N under the request's strategy keeps every decoder layer
// (less those experts) and the head on the accelerators; none for a dense model, without
// accelerators or a cpu budget, or when even every layer's experts on the host leave some module
// streaming (planner/host_experts.h).
std::optional<int> smallest_cpu_moe_layers(const ModuleTree& tree, const PlanRequest& request);

// Takes a custom map (`--device-map FILE.json`), checks it and reports it: every parameter
// covered by exactly one entry, every entry naming a module of the model, every device budgeted
// (or disk), every budget respected. InputError saying which, otherwise.
Plan plan_from_device_map(const ModuleTree& tree, const DeviceMap& map, const PlanRequest& request);

class SizedTree;
// Fills placement and devices for a map (shared by the strategies and the custom-map path),
// run buffers included.
void fill_report(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& request, Plan* plan);

// The run shape a request plans for: its context (clamped to the model's positions), batch,
// tokens per forward and the threads each device gets.
RunShape run_shape(const PlanRequest& request, const ModelConfig& config);

// The devices a run of `plan` gets: each accelerator with its capacity_bytes, and the host
// with the cpu's (when budgeted). make_run_devices takes this.
Budgets run_capacities(const Plan& plan);

}  // namespace plexus
