// Opening a model for a run, shared by `generate`, `perplexity` and `bench`: the planning inputs
// (budgets from a memory map, N virtual devices or the detected hardware; strategy or a device
// map file), the plan they give, and the Executor that runs it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/device_registry.h"
#include "comm/world_config.h"
#include "core/json.h"
#include "exec/executor.h"
#include "exec/tensor_parallel_runner.h"
#include "exec/run_devices.h"
#include "model/module_tree.h"
#include "planner/planner.h"
#include "runtime/runner.h"

namespace plexus {

// What `plexus plan` takes on its command line, as plain values (the bench YAML fills the same).
struct PlanInputs {
  std::string strategy = "stages";
  std::optional<std::string> dtype;            // "bfloat16", "bf16", ...
  std::optional<std::string> quantize;         // quantise on load: a mix name, "Q4_K_M" ... (--quantize)
  std::optional<std::string> max_memory;       // "0=10GiB,cpu=64GiB"
  std::optional<long long> virtual_devices;    // N accelerators sharing the host's memory
  std::optional<long long> virtual_gpus;       // N CUDA devices sharing GPU 0 (--virtual-gpus / PLEXUS_VIRTUAL_GPUS)
  std::optional<std::vector<long long>> devices;  // accelerator ordinals kept
  long long context = 4096;
  // The context was asked for (--context, backend.context): beyond the model's positions it is
  // clamped with a note. A default is clamped silently.
  bool context_given = true;
  long long batch = 1;
  long long batch_tokens = 256;  // tokens per forward pass (--batch-tokens): sizes activations and logits
  int threads = 0;               // threads of the run (--threads; 0: one per hardware thread)
  bool offload_disk = false;
  std::optional<std::string> device_map_file;
  // --tensor-parallel / --pipeline-parallel: every layer split over `tensor_parallel` devices,
  // the layers over `pipeline_parallel` stages of such groups (comm/world_config.h).
  long long tensor_parallel = 1;
  long long pipeline_parallel = 1;
  // --expert-parallel: a tensor-parallel group of this many devices whose ranks hold a mixture's
  // experts whole (docs/parallel.md).
  long long expert_parallel = 1;
  bool parallel() const { return tensor_parallel > 1 || expert_parallel > 1 || pipeline_parallel > 1; }
  // The ranks these ask for (make_world_config: InputError naming the flags).
  WorldConfig world() const { return make_world_config(tensor_parallel, pipeline_parallel, 1, expert_parallel); }
  // --cpu-moe / --n-cpu-moe N (bench backend.cpu_moe / backend.n_cpu_moe): the experts of every
  // mixture-of-experts layer, or of the first N layers, kept in host memory and computed there.
  bool cpu_moe = false;
  std::optional<long long> n_cpu_moe;
  // Any of max_memory, virtual_devices, virtual_gpus, devices, device_map_file: plan and run across devices.
  bool names_devices() const { return max_memory || virtual_devices || virtual_gpus || devices || device_map_file; }
};

// The strategies, as --strategy, --device-map and backend.device_map name them.
inline constexpr const char* kStrategyChoices = "stages, sequential, balanced, balanced_low_0 or auto";

// Checks every input that needs no model: strategy and dtype names, --context, --max-sequences,
// --virtual-devices and --devices ranges (no device twice), --max-memory syntax, budgets given
// two ways, a --device-map file that is not there. InputError naming the flag and what it allows.
// The run commands call it whether or not they plan, so a bad value never passes silently.
void check_plan_inputs(const PlanInputs& in);

// InputError when `max_sequences` sequences, each decoding one token per forward pass, cannot
// share a pass of `batch_tokens` tokens (--max-sequences above --batch-tokens): every command
// that takes both flags (the runs, plan, deploy).
void check_sequences_per_pass(long long max_sequences, long long batch_tokens);

// The layers whose experts --cpu-moe (all) or --n-cpu-moe N (the first N) keep on the host: 0
// without them. InputError on a dense model, or for N above the model's layer count.
int cpu_moe_layers(const PlanInputs& in, const ModelConfig& config);

struct PlanOptions {
  PlanRequest request;
  bool fastest = false;  // --strategy fastest: request.strategy is a placeholder (exec/fastest.h chooses)
  std::optional<std::string> device_map_file;
  std::string budgets_source;  // where the budgets came from, for the report
  // What the budgeted accelerators are when a run makes them: GPUs the CUDA runtime sees (or
  // virtual GPUs), else virtual CPU devices.
  RunAccelerators accelerators;
  // One line for the user when detected GPUs run on the CPU (CUDA unusable); empty otherwise.
  std::string device_note;
};

// Builds the request (after check_plan_inputs). Without max_memory, budgets are the detected accelerators' free memory
// (the GPUs as the CUDA runtime numbers them when it sees any) and the host's available memory,
// or with virtual_devices N, N accelerators sharing the host's available memory equally, or with
// virtual_gpus N, N accelerators sharing GPU 0's free memory equally (InputError without a GPU).
// Errors name the command-line flags (--max-memory, ...) and, for a device that does not exist,
// the devices that do.
PlanOptions plan_options_from(const PlanInputs& in, const ModelConfig& config);

// The budgets one rank of a tensor × pipeline parallel group plans with (`all`: the run's): stage
// s is the accelerators s·tp … s·tp + tp − 1 in order, planned as accelerator s with the smallest
// budget among them, so one plan fits every rank; cpu and disk budgets divided between the tp
// ranks. InputError naming --tp, --pp and the device count when there are fewer than tp × pp
// (and --virtual-gpus as the way out when `gpus`, else --virtual-devices).
Budgets group_budgets(const Budgets& all, const WorldConfig& w, bool gpus = false);
// `plan` (plan_model or plan_from_device_map on group budgets) with a budget error of the rank's
// plan said in the run's terms: its device s is every device of stage s, its cpu budget 1/tp.
Plan plan_for_group(const WorldConfig& w, const std::function<Plan()>& plan);

// MODEL is a directory (config.json [+ safetensors, whose headers give real shapes]) or a
// config.json file. `quantize`: the tree as quantise-on-load leaves it (ModuleTree::quantize_as).
ModuleTree load_module_tree(const std::string& model, std::optional<QuantMix> quantize = std::nullopt);
// The mix of PlanInputs::quantize (checked by check_plan_inputs); nullopt when absent.
std::optional<QuantMix> quantize_type(const PlanInputs& in);

// MemAvailable from /proc/meminfo, in bytes; RuntimeError when unreadable.
std::uint64_t host_available_memory();

// One of `count` replicas run side by side in this process (plexus batch): it gets 1/count of
// the threads and, on several devices, the index-th of `count` equal groups of the
// accelerators, renumbered from 0 (and 1/count of the cpu and disk budgets).
struct ReplicaShare {
  int index = 0;
  int count = 1;
};

// `threads` (0: every hardware thread) split between `count` replicas of one process (batch
// --replicas): each needs one at least, so InputError when 0 < threads < count (--threads is
// never raised silently). (mpirun worker ranks are processes of their own, one thread at least each.)
void check_thread_share(int threads, int count);

struct RunInputs {
  EngineOptions engine;
  PlanInputs plan;
  int micro_batch = 0;    // sequences per micro-batch (--micro-batch); 0: as micro_batches says
  int micro_batches = 0;  // micro-batches per forward (--micro-batches); 0: one per stage (1 when weights stream)
  ReplicaShare replica;
  // With plan.quantize: stops quantise-on-load when it returns true (a caught SIGINT).
  std::function<bool()> stop_requested;
  // Tensor parallelism across processes (mpirun, comm/mpi_collective.h): gives the collective of
  // the --tp group, of which this process is one rank. The process then runs its rank's shard
  // in one stage on the host (its threads: engine.threads), the weights read in place.
  std::function<std::unique_ptr<Collective>()> process_group;
  // Tests: this process's rank throws at its first forward (PLEXUS_TP_FAIL_RANK).
  bool inject_forward_failure = false;
};

// What runs the model: always an Executor. Without devices named (see PlanInputs::names_devices):
// every GPU the CUDA runtime sees, planned as --devices would plan them (its `context` is the
// run's own length), or, without GPUs, one stage on the host device (every thread, weights read
// in place from the checkpoint; no plan). With them: the plan they describe, across the devices
// (GPUs or virtual CPU devices).
struct ModelRun {
  DeviceRegistry devices;
  std::unique_ptr<Executor> executor;  // after `devices`: destroyed first
  // Tensor parallelism (--tp > 1): the group's ranks, each an executor on devices of its own
  // (or, across processes, this process's rank); `executor` is then null.
  std::unique_ptr<TensorParallelRunner> tensor;
  Runner* runner = nullptr;            // the executor, or the tensor-parallel group
  // The execution statistics of the executor or of every rank of the group.
  ExecStats stats() const { return tensor ? tensor->stats() : executor->stats(); }
  // Devices were named: a plan was made (plan, plan_text, plan_json) and the run reports its
  // execution (per-device stats). A run on the host alone reports as it always has.
  bool planned() const { return plan.has_value(); }
  std::string plan_text;  // budgets, plan table and stages (multi-device runs)
  Json plan_json;         // plan_to_json + "budgets_source" (multi-device runs); null otherwise
  std::optional<Plan> plan;  // the plan run (multi-device runs)
  int threads = 0;
  WaitPolicy wait = WaitPolicy::kAuto;  // how the CPU devices' idle pool threads wait
  std::string isa;
  // One line for the user (the command prints it as "note: ..."): why a run that could have used
  // GPUs is on the CPU (no CUDA driver, or detected GPUs the CUDA runtime cannot use), or that a
  // run without device flags took the GPUs. Empty otherwise.
  std::string device_note;
  // The CUDA runtime's indices of the GPUs the run computes on (empty: none), so a monitor can
  // watch just those.
  std::vector<int> cuda_gpus;
  std::optional<QuantMix> quantize;  // the weights were quantised on load to this mix
};
std::unique_ptr<ModelRun> open_model_run(const RunInputs& inputs, const std::string& model_dir);

// The cost model's prediction for `run` (planner/cost_model.h) with this host's calibrated
// facts: its plan on several devices, else one host device with the run's threads; for
// prompts of `prompt_tokens` and decode at `decode_positions` on average, `batch` sequences.
// prediction_to_json plus "facts_source"; null when no prediction can be made.
Json predict_run(const ModelRun& run, const std::string& model_dir, double prompt_tokens, double decode_positions,
                 std::int64_t batch);

}  // namespace plexus
