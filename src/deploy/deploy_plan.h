// The devices and the plan's numbers of a deployment: GPUs selected from the target host's
// inventory, the planner run on their free memory (or the host's, for a CPU deployment), and
// from that plan every engine's numbers (PlanNumbers). Rules: docs/deploy.md "Devices and the
// plan's numbers".
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "backend/device_info.h"
#include "deploy/deploy_spec.h"
#include "deploy/device_selection.h"
#include "exec/model_run.h"

namespace plexus::deploy {

struct DeployRequest {
  std::string model;  // directory (or .gguf) as given
  Target target = Target::kDocker;
  ApiType api_type = ApiType::kPlexus;
  // The plan flags (strategy, dtype, quantize, tp, pp, context, batch_tokens); the device and
  // budget fields are not used (the inventory gives the devices), batch is max_sequences.
  PlanInputs plan;
  std::optional<std::vector<long long>> devices;  // --devices
  bool auto_select = false;                       // --auto-select
  int max_sequences = 8;
  int nodes = 1;
  std::optional<int> gpus_per_node;  // --gpus-per-node
  std::string inventory_file;        // --inventory FILE; empty: the devices were detected on this machine
  std::optional<std::string> gpu_type;  // --gpu-type (slurm's GPU type; "none": no type)
};

struct DeployPlan {
  DeviceSelection devices;
  PlanNumbers numbers;
  int gpus_per_node = 0;
  int cpus = 1;
  bool embedding_model = false;
  std::vector<std::string> cuda_architectures;
  // vLLM, TGI, TEI: what the sizing read from config.json and the safetensors headers, with the keys.
  std::string sizing;
  std::string gpu_type;         // slurm: the --gres GPU type ("" for none)
  std::string gpu_type_reason;  // slurm: where it came from, or why there is none
};

// The margins of the numbers (documented in docs/deploy.md).
inline constexpr std::int64_t kGiB = 1LL << 30;
inline constexpr double kVllmDefaultUtilization = 0.90;  // vLLM's --gpu-memory-utilization default
inline constexpr double kVllmMaxUtilization = 0.95;
inline constexpr double kVllmMargin = 1.05;                    // 5 % on top of the plan's bytes ...
inline constexpr std::int64_t kVllmFixedMargin = kGiB;         // ... plus 1 GiB (CUDA context, graphs, sampler)
inline constexpr std::int64_t kProcessBytes = 2 * kGiB;        // the server process on the host
inline constexpr std::int64_t kProcessBytesPerGpu = kGiB;      // each GPU's context and pinned buffers on the host
inline constexpr std::int64_t kShmSingle = 2 * kGiB;           // /dev/shm for one device
inline constexpr std::int64_t kShmPerGpu = 8 * kGiB;           // ... for NCCL / vLLM workers over several GPUs
inline constexpr std::int64_t kTeiBatchBytes = kGiB;           // TEI's batch buffers beside the weights

// Selects the devices and plans; InputError (exit 2) naming the flag for every bad input: devices
// that do not exist, a plan that does not fit, an engine that cannot split the model that way,
// an embedding model for plexus / a causal LM for TEI, --nodes / --gpus-per-node out of place.
DeployPlan plan_deployment(const DeployRequest& request, const Inventory& inventory);

// Shared by plexus's plan (deploy_plan.cpp) and the other engines' sizing (engine_plan.cpp): the
// GPUs --devices names, --auto-select picks (by `fit`, among the counts the engine takes for a model
// of `heads` / `kv_heads`), or all; none: a CPU deployment. InputError for --devices on an inventory
// without GPUs, saying what to add.
DeviceSelection select_devices(const DeployRequest& request, const std::vector<SelectedGpu>& gpus, const Inventory& inventory,
                               std::int64_t heads, std::int64_t kv_heads, const FitCheck& fit);

// CPU cores for the server (per task under slurm): the selected GPUs' share of the host's
// logical cores (all of them for a CPU deployment), leaving cores/16 (at least 1) to the system
// (Kubernetes' allocatable CPU is below the node's capacity), at least 1.
int cpus_for(int host_cores, int selected_gpus, int inventory_gpus);

// vLLM's tensor-parallel size for `gpus` GPUs of one node: the largest divisor of `gpus` that
// divides the attention heads, and divides or is a multiple of the KV heads (vLLM replicates KV
// heads when the TP size exceeds them).
int vllm_tensor_parallel(int gpus, std::int64_t heads, std::int64_t kv_heads);

}  // namespace plexus::deploy
