// Planning inputs → plan → the Executor that runs it.
#include "exec/model_run.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "backend/cuda_availability.h"
#include "backend/detect.h"
#include "backend/device_options.h"
#include "core/args.h"
#include "core/error.h"
#include "exec/compute_ops_factory.h"
#include "exec/fastest.h"
#include "exec/plan_facts.h"
#include "exec/quantize_progress.h"
#include "planner/cost_model.h"
#include "exec/run_devices.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/quant_policy.h"
#include "model/tensor_split.h"
#include "comm/in_process_group.h"
#include "comm/world_config.h"
#include "planner/parallel_plan.h"
#ifdef PLEXUS_HAVE_CUDA
#include "backend/cuda/cuda_device.h"
#include "comm/cuda/gpu_group.h"
#endif
#include "planner/plan_report.h"

namespace plexus {

std::uint64_t host_available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  throw RuntimeError("cannot read MemAvailable from /proc/meminfo: pass budgets with --max-memory");
}

void check_plan_inputs(const PlanInputs& in) {
  if (in.strategy != "fastest") parse_strategy_or_throw(in.strategy);
  if (in.dtype) parse_weight_dtype_or_throw(*in.dtype, "--dtype");
  if (in.quantize) {
    quantize_flag("--quantize", *in.quantize);
    if (in.dtype && weight_block_format(parse_weight_dtype_or_throw(*in.dtype, "--dtype"))) {
      throw InputError("--dtype " + *in.dtype + " and --quantize " + *in.quantize +
                       " both choose a quantisation of the projections: give one of them");
    }
  }
  if (in.context < 0 || in.context > (1LL << 24)) {
    throw InputError("--context must be between 0 and 16777216, got " + std::to_string(in.context));
  }
  if (in.batch < 1 || in.batch > 65536) throw InputError("--max-sequences must be between 1 and 65536, got " + std::to_string(in.batch));
  if (in.max_memory && in.virtual_devices) {
    throw InputError("--max-memory and --virtual-devices both set budgets: pass one of them (the devices --max-memory "
                     "names are what a run splits the CPU into when there are no GPUs)");
  }
  if (in.max_memory) parse_max_memory(*in.max_memory);
  if (in.virtual_devices && (*in.virtual_devices < 1 || *in.virtual_devices > 1024)) {
    throw InputError("--virtual-devices must be between 1 and 1024, got " + std::to_string(*in.virtual_devices));
  }
  if (in.virtual_gpus && (*in.virtual_gpus < 1 || *in.virtual_gpus > 1024)) {
    throw InputError("--virtual-gpus must be between 1 and 1024, got " + std::to_string(*in.virtual_gpus));
  }
  if (in.virtual_gpus && in.virtual_devices) {
    throw InputError("--virtual-devices splits the CPU and --virtual-gpus splits GPU 0: pass one of them");
  }
  if (in.devices) check_device_numbers(*in.devices, "--devices");
  in.world();  // --tp, --pp and --ep
  if (in.cpu_moe && in.n_cpu_moe) throw InputError("--cpu-moe and --n-cpu-moe both say where experts go: give one of them");
  if (in.n_cpu_moe && (*in.n_cpu_moe < 0 || *in.n_cpu_moe > (1LL << 20))) {
    throw InputError("--n-cpu-moe must be a layer count from 0 up, got " + std::to_string(*in.n_cpu_moe));
  }
  if ((in.cpu_moe || in.n_cpu_moe) && in.device_map_file) {
    throw InputError(std::string(in.cpu_moe ? "--cpu-moe" : "--n-cpu-moe") +
                     " and --device-map both place the experts: name them in the map instead (\"model.layers.N.mlp.experts\": \"cpu\")");
  }
  if (in.device_map_file && !std::filesystem::is_regular_file(*in.device_map_file)) {
    throw InputError("--device-map: '" + *in.device_map_file +
                     "' not found: give a device map file (JSON: module prefix -> device) or a strategy (" +
                     std::string(kStrategyChoices) + ")");
  }
}

void check_sequences_per_pass(long long max_sequences, long long batch_tokens) {
  if (max_sequences <= batch_tokens) return;
  throw InputError("--max-sequences " + std::to_string(max_sequences) + " sequences decode one token each per forward pass, but "
                   "--batch-tokens " + std::to_string(batch_tokens) + " allows fewer tokens per pass: raise "
                   "--batch-tokens or lower --max-sequences");
}

int cpu_moe_layers(const PlanInputs& in, const ModelConfig& config) {
  if (!in.cpu_moe && !in.n_cpu_moe) return 0;
  const std::string flag = in.cpu_moe ? "--cpu-moe" : "--n-cpu-moe " + std::to_string(*in.n_cpu_moe);
  if (!config.is_moe()) {
    throw InputError(flag + ": the model has no experts (" + std::string(arch_name(config.arch)) +
                     " is dense): leave the flag out");
  }
  if (in.cpu_moe) return static_cast<int>(config.num_layers);
  if (*in.n_cpu_moe > config.num_layers) {
    throw InputError(flag + " is more than the model's " + std::to_string(config.num_layers) +
                     " layers (num_hidden_layers): give at most " + std::to_string(config.num_layers) + " (or --cpu-moe for all)");
  }
  return static_cast<int>(*in.n_cpu_moe);
}

PlanOptions plan_options_from(const PlanInputs& in, const ModelConfig& config) {
  check_plan_inputs(in);
  PlanOptions o;
  PlanRequest& r = o.request;
  o.fastest = in.strategy == "fastest";
  r.strategy = o.fastest ? Strategy::kStages : parse_strategy_or_throw(in.strategy);
  if (o.fastest && in.device_map_file) {
    throw InputError("--strategy fastest and --device-map both choose the placement: pass one of them");
  }
  if (in.dtype) {
    r.dtype = parse_weight_dtype_or_throw(*in.dtype, "--dtype");
  } else {
    r.dtype = WeightDType::kBF16;
    if (config.torch_dtype) parse_weight_dtype(dtype_torch_name(*config.torch_dtype), &r.dtype);
  }
  if (in.batch_tokens < 1 || in.batch_tokens > 65536) {
    throw InputError("--batch-tokens must be between 1 and 65536, got " + std::to_string(in.batch_tokens));
  }
  check_sequences_per_pass(in.batch, in.batch_tokens);
  r.cpu_moe_layers = cpu_moe_layers(in, config);
  r.runtime.context = in.context_given ? in.context : std::min<long long>(in.context, config.max_position_embeddings);
  r.runtime.batch = in.batch;
  r.runtime.prefill_chunk = in.batch_tokens;
  r.runtime.threads = in.threads > 0 ? in.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  // The devices that exist, for an error naming a device that does not.
  std::string existing = "cpu only";
  if (in.virtual_gpus) {
    // GPU 0 split into N CUDA devices: budgets are 1/N of its free memory unless --max-memory says.
    const int n = static_cast<int>(*in.virtual_gpus);
    const CudaAvailability cuda = probe_cuda(CudaFreeMemory::kGpu0);
    const Inventory split = virtual_gpus_inventory(n, cuda, read_host_info());  // InputError without a GPU
    o.accelerators.cuda = true;
    o.accelerators.physical_gpu.assign(static_cast<std::size_t>(n), 0);
    o.accelerators.description = std::to_string(n) + " virtual GPU(s) on GPU 0 (" + cuda.gpus.front().name + ")";
    existing = "0.." + std::to_string(n - 1) + " (" + o.accelerators.description + ")";
    if (in.max_memory) {
      r.budgets = parse_max_memory(*in.max_memory);
      for (const DeviceId& d : r.budgets.accelerators()) {
        if (d.ordinal() >= n) {
          throw InputError("--max-memory names device " + std::to_string(d.ordinal()) + ", but --virtual-gpus " +
                           std::to_string(n) + " makes devices 0.." + std::to_string(n - 1) +
                           ": name only those, or ask for more virtual GPUs");
        }
      }
      o.budgets_source = "--max-memory on " + o.accelerators.description;
    } else {
      for (const DeviceInfo& d : split.devices) r.budgets.set(DeviceId::accelerator(d.index), *d.memory_free_bytes);
      r.budgets.set(DeviceId::cpu(), host_available_memory());
      o.budgets_source = o.accelerators.description + " sharing its free memory, and the host's available memory";
      r.budgets_from_user = false;
    }
  } else if (in.max_memory) {
    r.budgets = parse_max_memory(*in.max_memory);
    o.budgets_source = "--max-memory";
    // Budgets name GPUs when the CUDA runtime sees any; without, the devices they name are
    // virtual CPU devices (rehearsing a GPU plan on the CPU).
    const CudaAvailability cuda = probe_cuda(CudaFreeMemory::kNone);
    if (cuda.usable()) {
      o.accelerators.cuda = true;
      for (const CudaGpu& g : cuda.gpus) o.accelerators.physical_gpu.push_back(g.index);
      o.accelerators.description = std::to_string(cuda.gpus.size()) + " GPU(s) the CUDA runtime sees";
    }
  } else if (in.virtual_devices) {
    const long long n = *in.virtual_devices;
    const std::uint64_t each = host_available_memory() / static_cast<std::uint64_t>(n);
    for (long long i = 0; i < n; ++i) r.budgets.set(DeviceId::accelerator(static_cast<int>(i)), each);
    o.budgets_source = std::to_string(n) + " virtual devices sharing the host's available memory";
    r.budgets_from_user = false;
  } else {
    // The hardware at hand: every detected accelerator with its free memory (NVML / ROCm SMI,
    // or PLEXUS_VIRTUAL_DEVICES), and the host's available memory for cpu offload.
    // With GPUs the CUDA runtime sees, the accelerators are those GPUs in its numbering (what
    // torch and accelerate call cuda:N); otherwise the detected devices run as virtual CPU devices.
    const Inventory inventory = detect_devices(device_options_from_env());
    bool on_gpus = false;
    for (const DeviceInfo& d : inventory.devices) on_gpus = on_gpus || d.cuda_device.has_value();
    std::string have;
    for (const DeviceInfo& d : inventory.devices) {
      if (on_gpus && !d.cuda_device) continue;
      const int ordinal = on_gpus ? std::stoi(d.cuda_device->substr(5)) : d.index;
      if (d.memory_free_bytes) r.budgets.set(DeviceId::accelerator(ordinal), *d.memory_free_bytes);
      if (on_gpus) {
        o.accelerators.cuda = true;
        if (o.accelerators.physical_gpu.size() <= static_cast<std::size_t>(ordinal))
          o.accelerators.physical_gpu.resize(static_cast<std::size_t>(ordinal) + 1, 0);
        o.accelerators.physical_gpu[static_cast<std::size_t>(ordinal)] = d.virtual_on_gpu.value_or(ordinal);
      }
      have += (have.empty() ? "" : ", ") + std::to_string(ordinal) + " (" + (on_gpus ? *d.cuda_device + ", " : "") + d.name + ")";
    }
    if (on_gpus) {
      o.accelerators.description = inventory.virtual_gpus > 0
                                       ? std::to_string(inventory.virtual_gpus) + " virtual GPU(s) on GPU 0"
                                       : std::to_string(o.accelerators.physical_gpu.size()) + " GPU(s) the CUDA runtime sees";
    } else if (!inventory.devices.empty() && !inventory.virtual_devices) {
      o.device_note = "CUDA " + inventory.cuda_status + ": the " + std::to_string(inventory.devices.size()) +
                      " detected GPU(s) run as virtual CPU devices with their budgets";
    }
    existing = have.empty() ? "cpu only (no GPU detected; CUDA " + inventory.cuda_status + ")" : have;
    r.budgets.set(DeviceId::cpu(), host_available_memory());
    o.budgets_source = r.budgets.accelerators().empty()
                           ? "host available memory (no accelerators detected)"
                           : on_gpus ? "the CUDA GPUs' free memory and the host's available memory"
                                     : "detected devices' free memory and the host's available memory";
    r.budgets_from_user = false;
  }
  if (in.devices) {
    Budgets kept;
    for (long long ord : *in.devices) {
      const DeviceId d = DeviceId::accelerator(static_cast<int>(ord));
      const auto b = ord < 0 ? std::nullopt : r.budgets.get(d);
      if (!b) {
        std::string have;
        for (const DeviceId& a : r.budgets.accelerators()) have += (have.empty() ? "" : ",") + a.to_string();
        if (have.empty() && !in.max_memory && !in.virtual_devices) {
          throw InputError("--devices: device " + std::to_string(ord) + " does not exist; the devices that exist: " +
                           existing + ". Use --virtual-devices N to split the CPU into N devices (or --virtual-gpus N "
                           "on a machine with a GPU)");
        }
        throw InputError("--devices: device " + std::to_string(ord) + " has no budget (accelerators: " +
                         (have.empty() ? std::string("none") : have) + "); name it in --max-memory or use --virtual-devices N");
      }
      kept.set(d, *b);
    }
    for (const DeviceBudget& b : r.budgets.list()) {
      if (!b.device.is_accelerator()) kept.set(b.device, b.bytes);
    }
    r.budgets = kept;
  }
  r.allow_disk = in.offload_disk || r.budgets.has(DeviceId::disk());
  // stages / fastest keep experts on the host by themselves only where the run computes them: not
  // on CUDA layers (not built yet), nor under --tp/--pp (not checked there; --n-cpu-moe still asks).
  r.auto_host_experts = !o.accelerators.cuda && !in.parallel();
  o.device_map_file = in.device_map_file;
  if (o.accelerators.cuda) {  // the GPU kernels' own scratch sits beside the run buffers
    const std::int64_t context = std::max<std::int64_t>(1, std::min<std::int64_t>(in.context, config.max_position_embeddings));
    r.runtime.accelerator_kernel_scratch =
        kernel_scratch_bytes(DeviceKind::kCuda, OpsShape{&config, in.batch_tokens, context, false});
  }
  return o;
}

namespace {

// The tree as the checkpoint stores it (or from config.json alone).
ModuleTree load_stored_module_tree(const std::string& model) {
  const ModelConfig config = load_model_config(model);
  if (Checkpoint::exists_in(model)) {  // a model directory with weights, or a GGUF file
    const Checkpoint checkpoint(model);
    return ModuleTree::from_checkpoint(config, checkpoint);
  }
  return ModuleTree::from_config(config);
}

}  // namespace

ModuleTree load_module_tree(const std::string& model, std::optional<QuantMix> quantize) {
  ModuleTree tree = load_stored_module_tree(model);
  if (quantize) tree.quantize_as(*quantize);
  return tree;
}

std::optional<QuantMix> quantize_type(const PlanInputs& in) {
  if (!in.quantize) return std::nullopt;
  return quantize_flag("--quantize", *in.quantize);
}

// The budgets one rank of a tensor-parallel group plans with: pipeline stage s of `w` is the
// accelerators s·tp … s·tp + tp − 1 (tensor-parallel rank fastest), and every rank gets the
// smallest budget of its stage's devices, so one plan fits every rank; cpu and disk budgets are
// shared by the tp ranks. InputError when there are fewer accelerators than tp × pp.
Budgets group_budgets(const Budgets& all, const WorldConfig& w, bool gpus) {
  const std::vector<DeviceId> acc = all.accelerators();
  const std::size_t need = static_cast<std::size_t>(w.tp * w.pp);
  if (acc.size() < need) {
    throw InputError(std::string(w.group_flag()) + " " + std::to_string(w.tp) + " × --pp " + std::to_string(w.pp) + " needs " + std::to_string(need) +
                     " devices but the run has " + std::to_string(acc.size()) + ": give " +
                     (gpus ? "--virtual-gpus " + std::to_string(need) + " (that many virtual GPUs sharing GPU 0)"
                           : "--virtual-devices " + std::to_string(need)) +
                     " (or budgets for " + std::to_string(need) + " devices in --max-memory / --devices), or a smaller " + w.group_flag() + "/--pp");
  }
  Budgets kept;
  for (int s = 0; s < w.pp; ++s) {
    std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
    for (int t = 0; t < w.tp; ++t) least = std::min(least, *all.get(acc[static_cast<std::size_t>(s * w.tp + t)]));
    kept.set(DeviceId::accelerator(s), least);
  }
  for (const DeviceBudget& b : all.list()) {
    if (!b.device.is_accelerator()) kept.set(b.device, b.bytes / static_cast<std::uint64_t>(w.tp));
  }
  return kept;
}

Plan plan_for_group(const WorldConfig& w, const std::function<Plan()>& plan) {
  if (w.tp == 1) return plan();
  try {
    return plan();
  } catch (const InputError& e) {
    throw InputError(std::string(w.group_flag()) + " " + std::to_string(w.tp) + ": one tensor-parallel rank's plan (its device s stands for each of the run's devices s·" +
                     std::to_string(w.tp) + " … s·" + std::to_string(w.tp) + " + " + std::to_string(w.tp - 1) +
                     ", its cpu budget is 1/" + std::to_string(w.tp) + " of the run's): " + e.what());
  }
}

namespace {

// The share-th group of the accelerators' budgets, renumbered from 0; cpu (and disk) budgets
// divided between the replicas.
Budgets replica_budgets(const Budgets& all, const ReplicaShare& share) {
  const std::vector<DeviceId> acc = all.accelerators();
  const std::size_t count = static_cast<std::size_t>(share.count);
  if (acc.size() < count || acc.size() % count != 0) {
    throw InputError(std::to_string(share.count) +
                     " replicas on this machine (--replicas, or mpirun worker ranks) need the accelerators split into equal groups, but there are " +
                     std::to_string(acc.size()) + ": use a replica count that divides the device count (e.g. --virtual-devices " +
                     std::to_string(count * std::max<std::size_t>(1, acc.size() / count)) + ")");
  }
  const std::size_t k = acc.size() / count;
  Budgets kept;
  for (std::size_t i = 0; i < k; ++i) {
    kept.set(DeviceId::accelerator(static_cast<int>(i)), *all.get(acc[static_cast<std::size_t>(share.index) * k + i]));
  }
  for (const DeviceBudget& b : all.list()) {
    if (!b.device.is_accelerator()) kept.set(b.device, b.bytes / static_cast<std::uint64_t>(count));
  }
  return kept;
}


// The dtype a run computes in: the checkpoint's own (its embedding's), else the plan's.
// A GGUF file (block formats) plans as bfloat16: its tensors are sized as stored (SizedTree's
// "as stored"), the 16-bit dtype picks the KV cache's width.
WeightDType checkpoint_weight_dtype(const ModuleTree& tree, WeightDType otherwise) {
  WeightDType stored = otherwise;
  if (const ParamInfo* p = tree.find("model.embed_tokens.weight"); p && p->dtype) {
    if (dtype_is_block(*p->dtype)) stored = WeightDType::kBF16;
    parse_weight_dtype(dtype_torch_name(*p->dtype), &stored);
  }
  return stored;
}

// --dtype on a run must be the checkpoint's own (runs do not convert weights).
void check_run_dtype(const PlanInputs& in, WeightDType stored) {
  if (!in.dtype) return;
  const WeightDType asked = parse_weight_dtype_or_throw(*in.dtype, "--dtype");
  if (!(asked == stored)) {
    throw InputError("--dtype " + *in.dtype + ": runs use the checkpoint's own dtype (" + std::string(weight_dtype_name(stored)) +
                     "); leave --dtype out (`plexus plan --dtype` estimates other dtypes without running" +
                     (weight_block_format(asked) ? std::string(", --quantize ") + std::string(dtype_torch_name(*weight_block_format(asked))) +
                                                       " quantises the projections on load"
                                                 : std::string()) +
                     ")");
  }
}

// The accelerators of tensor-parallel rank r on GPUs: its device s is the run's device s·tp + r
// (pipeline stage s, tp rank fastest), on that device's GPU.
RunAccelerators rank_accelerators(const RunAccelerators& run, const WorldConfig& world, int r, int n_devices) {
  RunAccelerators mine;
  mine.cuda = true;
  for (int s = 0; s < n_devices; ++s) {
    const auto i = static_cast<std::size_t>(s * world.tp + r);
    if (i >= run.physical_gpu.size()) break;  // past the GPUs: make_run_devices names them
    mine.physical_gpu.push_back(run.physical_gpu[i]);
  }
  mine.description = run.description + ", tensor-parallel rank " + std::to_string(r);
  return mine;
}

// The collectives of the ranks' devices d (host: d = n_devices): host memory sums in-process;
// CUDA devices through the CUDA in-process group or NCCL (comm/cuda/gpu_group.h). `report` gets
// a line naming the choice for GPU groups.
std::unique_ptr<RankGroup> make_rank_group(std::vector<DeviceRegistry>& devices, int d, int n_devices, std::string* report) {
  const int tp = static_cast<int>(devices.size());
#ifdef PLEXUS_HAVE_CUDA
  if (d < n_devices && devices.front().accelerator(d).kind() == DeviceKind::kCuda) {
    std::vector<cuda::CudaRankPlace> places;
    for (int r = 0; r < tp; ++r) {
      auto& dev = static_cast<CudaDevice&>(devices[static_cast<std::size_t>(r)].accelerator(d));
      if (dev.compute_stream() == nullptr) return std::make_unique<InProcessGroup>(tp);  // a placeholder: nothing computes there
      places.push_back({dev.physical_device(), dev.compute_stream(), dev.name() + " of tensor-parallel rank " + std::to_string(r)});
    }
    cuda::GpuGroup g = cuda::make_gpu_group(std::move(places));
    *report += "collectives of the ranks' device " + std::to_string(d) + ": " + gpu_collective_name(g.choice.kind) + " (" +
               g.choice.reason + ")\n";
    return std::move(g.group);
  }
#endif
  (void)devices;
  (void)d;
  (void)n_devices;
  (void)report;
  return std::make_unique<InProcessGroup>(tp);
}

// What an executor of `plan` is told: the plan's context and sequences, the run's batch tokens,
// and the micro-batches a forward pass is cut into: --micro-batch M sequences each (of the plan's
// sequences in flight), or the number --micro-batches gave.
ExecutorOptions planned_executor_options(const EngineOptions& eo, const Plan& plan, const RunInputs& in) {
  ExecutorOptions xo;
  xo.max_batch_tokens = eo.max_batch_tokens;
  xo.max_context = plan.runtime.context;
  xo.sequences = plan.runtime.batch;
  xo.micro_batches = in.micro_batch > 0 ? static_cast<int>((plan.runtime.batch + in.micro_batch - 1) / in.micro_batch)
                                        : in.micro_batches;
  return xo;
}

// The executors of a tensor-parallel group in this process: rank r computes shard r on devices
// of its own (the plan's capacities, made for one rank: virtual CPU devices, or CUDA devices on
// the GPUs of the run's devices s·tp + r), its partial products summed with the other ranks'
// devices of the same number through the group's collectives (make_rank_group).
std::unique_ptr<ModelRun> open_tensor_parallel(std::unique_ptr<ModelRun> run, const Plan& plan, const PlanOptions& po,
                                               const WorldConfig& world, const EngineOptions& eo, const RunInputs& in,
                                               const std::function<void(ExecutorOptions&)>& quantize_options,
                                               const std::string& model_dir, const ParallelPlan& devices) {
  TensorParallelRunner::Parts parts;
  parts.tp = world.tp;
  parts.expert_parallel = world.expert_parallel;
  const Budgets caps = run_capacities(plan);
  int n_devices = 0;
  for (const DeviceId& d : caps.accelerators()) n_devices = std::max(n_devices, d.ordinal() + 1);
  const int threads = std::max(1, run_thread_budget(eo.threads) / world.tp);
  const std::uint64_t host_share = host_available_memory() / static_cast<std::uint64_t>(world.tp);
  parts.devices.reserve(static_cast<std::size_t>(world.tp));  // executors hold references to them
  for (int r = 0; r < world.tp; ++r) {
    if (po.accelerators.cuda) {
      // Each rank's devices under budgets of their own (no thread budget shared across ranks:
      // see make_rank_devices).
      parts.devices.push_back(make_run_devices(caps, threads, host_share, rank_accelerators(po.accelerators, world, r, n_devices), eo.wait));
      for (int s = 0; s < n_devices; ++s) {
        const auto i = static_cast<std::size_t>(s * world.tp + r);
        if (i >= po.accelerators.physical_gpu.size()) break;
        const int g = po.accelerators.physical_gpu[i];
        if (std::find(run->cuda_gpus.begin(), run->cuda_gpus.end(), g) == run->cuda_gpus.end()) run->cuda_gpus.push_back(g);
      }
    } else {
      parts.devices.push_back(make_rank_devices(caps, threads, host_share, eo.wait));
    }
  }
  std::string collectives;
  std::vector<RankGroup*> groups;  // per device ordinal, the host's last
  for (int d = 0; d <= n_devices; ++d) {
    parts.groups.push_back(make_rank_group(parts.devices, d, n_devices, &collectives));
    groups.push_back(parts.groups.back().get());
  }
  for (int r = 0; r < world.tp; ++r) {
    ExecutorOptions xo = planned_executor_options(eo, plan, in);
    quantize_options(xo);
    xo.tensor = ExecutorOptions::TensorRank{TensorSplit{r, world.tp, world.expert_parallel}, [groups, r, n_devices](int d) -> Collective& {
                                              return groups[static_cast<std::size_t>(d < 0 ? n_devices : d)]->rank(r);
                                            }};
    parts.ranks.push_back(std::make_unique<Executor>(model_dir, plan.device_map, parts.devices[static_cast<std::size_t>(r)], xo));
  }
  const Executor& first = *parts.ranks.front();
  std::string buffers;
  for (const DeviceBuffers& b : first.buffers().devices) {
    buffers += "run buffers of each rank on " + (b.device == kHostDevice ? std::string("host") : "device " + std::to_string(b.device)) +
               ": " + describe_buffers(b) + "\n";
  }
  run->plan_text = parallel_plan_to_table(devices) + "tensor parallel: " + world.describe() + "; rank r's device d is the run's device d·" + std::to_string(world.tp) +
                   " + r, every rank holds its shard of each layer (the plan below is one rank's)\n" +
                   "budgets of one rank: " + po.request.budgets.to_string() + " (" + po.budgets_source + ")\n" + plan_to_table(plan) +
                   describe_layout(first.layout()) + buffers + collectives + "micro-batches per forward: " +
                   std::to_string(first.micro_batches()) + "\n";
  run->isa = first.kernels().name;
  int used = 0;
  for (const auto& e : parts.ranks) used += e->threads();
  run->threads = used;
  run->wait = eo.wait;
  run->tensor = std::make_unique<TensorParallelRunner>(std::move(parts));
  run->runner = run->tensor.get();
  run->plan_json = plan_to_json(plan);
  run->plan_json["budgets_source"] = po.budgets_source;
  run->plan_json["tensor_parallel"] = world.tp;
  run->plan_json["expert_parallel"] = world.expert_parallel ? world.tp : 1;
  run->plan_json["pipeline_parallel"] = world.pp;
  run->plan_json["parallel_devices"] = parallel_devices_to_json(devices);
  run->plan = plan;
  return run;
}

// One rank of a tensor-parallel group whose ranks are processes (mpirun): its shard in one
// stage on the host, the weights read in place, the partial sums and the logits exchanged
// through the group's collective.
std::unique_ptr<ModelRun> open_process_rank(const RunInputs& in, const EngineOptions& eo,
                                            const std::function<void(ExecutorOptions&)>& quantize_options,
                                            const std::optional<QuantMix>& quantize, const std::string& model_dir) {
  const WorldConfig world = in.plan.world();
  if (world.pp > 1) {
    throw InputError("--pp " + std::to_string(world.pp) + " under mpirun is not supported yet: the processes of an mpirun job "
                     "form one tensor-parallel group (--tp N with N ranks); run --pp in one process");
  }
  if (in.plan.names_devices()) {
    throw InputError("under mpirun every --tp rank runs on its host's CPU: leave out --virtual-devices, --virtual-gpus, "
                     "--max-memory, --devices and --device-map");
  }
  std::unique_ptr<Collective> group = in.process_group();
  if (group->size() != world.tp) {
    const std::string flag = world.group_flag();
    throw InputError("mpirun started " + std::to_string(group->size()) + " ranks but " + flag + " is " + std::to_string(world.tp) +
                     ": start " + flag + " ranks (mpirun -np " + std::to_string(world.tp) + ")");
  }
  const int rank = group->rank();
  // The split is checked before any weight is read: InputError naming the heads and the sizes that work.
  const ModuleTree tree = load_module_tree(model_dir, quantize);
  shard_module_tree(tree, TensorSplit{rank, world.tp, world.expert_parallel});
  if (in.plan.dtype) check_run_dtype(in.plan, checkpoint_weight_dtype(tree, WeightDType::kBF16));
  auto run = std::make_unique<ModelRun>();
  run->quantize = quantize;
  TensorParallelRunner::Parts parts;
  parts.tp = world.tp;
  parts.expert_parallel = world.expert_parallel;
  parts.devices.push_back(make_host_run_devices(eo.threads, eo.wait));
  ExecutorOptions xo = single_host_stage(eo);
  quantize_options(xo);
  Collective* c = group.get();
  xo.tensor = ExecutorOptions::TensorRank{TensorSplit{rank, world.tp, world.expert_parallel}, [c](int) -> Collective& { return *c; }};
  parts.world = std::move(group);
  parts.inject_forward_failure = in.inject_forward_failure;
  parts.ranks.push_back(std::make_unique<Executor>(model_dir, whole_model_on_host(), parts.devices.front(), xo));
  const Executor& mine = *parts.ranks.front();
  run->plan_text = "tensor parallel across processes: " + world.describe() + " (" + parts.world->kind() +
                   "); this is rank " + std::to_string(rank) + ", its shard in one stage on the host with " +
                   std::to_string(mine.threads()) + " threads\n" + describe_layout(mine.layout());
  run->threads = mine.threads();
  run->wait = eo.wait;
  run->isa = mine.kernels().name;
  run->tensor = std::make_unique<TensorParallelRunner>(std::move(parts));
  run->runner = run->tensor.get();
  return run;
}

}  // namespace

void check_thread_share(int threads, int count) {
  if (threads > 0 && threads < count) {
    throw InputError("--threads " + std::to_string(threads) + " cannot be shared by " + std::to_string(count) +
                     " replicas (--replicas): each computes on one thread at least; give --threads " + std::to_string(count) + " or more (0: every hardware thread), or fewer replicas");
  }
}

std::unique_ptr<ModelRun> open_model_run(const RunInputs& in, const std::string& model_dir) {
  auto run = std::make_unique<ModelRun>();
  EngineOptions eo = in.engine;
  const ReplicaShare& share = in.replica;
  if (share.count > 1) {
    const int total = eo.threads > 0 ? eo.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    eo.threads = std::max(1, total / share.count);
  }
  check_plan_inputs(in.plan);
  // Without device flags a run takes every GPU the CUDA runtime sees (planned as --devices would
  // plan them, split between replicas), else the host.
  const CudaAvailability cuda = in.plan.names_devices() ? CudaAvailability{} : probe_cuda(CudaFreeMemory::kNone);
  const bool on_gpus_by_default =
      cuda.usable() && cuda.gpus.size() % static_cast<std::size_t>(std::max(1, share.count)) == 0;
  const WorldConfig world = in.plan.world();
  PlanInputs pin = in.plan;
  // --tp/--pp without devices named and without GPUs: that many virtual CPU devices per replica.
  if (in.plan.parallel() && !in.plan.names_devices() && !on_gpus_by_default) {
    pin.virtual_devices = static_cast<long long>(world.size()) * std::max(1, share.count);
  }
  const std::optional<QuantMix> quantize = quantize_type(in.plan);
  run->quantize = quantize;
  auto quantize_options = [&](ExecutorOptions& x) {
    x.quantize = quantize;
    x.quantize_progress = quantize_progress_bar(in.stop_requested);
    x.quantize_threads = eo.threads;
  };
  if (in.process_group) return open_process_rank(in, eo, quantize_options, quantize, model_dir);
  if (!pin.names_devices() && !on_gpus_by_default) {
    if (in.plan.dtype || quantize) {
      const ModuleTree tree = load_module_tree(model_dir, quantize);  // checks the projections' shapes
      check_run_dtype(in.plan, checkpoint_weight_dtype(tree, WeightDType::kBF16));
    }
    // --cpu-moe / --n-cpu-moe: the host computes every layer already; the flags are still checked.
    cpu_moe_layers(in.plan, load_model_config(model_dir));
    // No note: nobody asked for a GPU (detect and doctor say why CUDA is unusable).
    // One stage on the host device with every thread, the weights read in place.
    run->devices = make_host_run_devices(eo.threads, eo.wait);
    ExecutorOptions xo = single_host_stage(eo);
    quantize_options(xo);
    run->executor = std::make_unique<Executor>(model_dir, whole_model_on_host(), run->devices, xo);
    run->runner = run->executor.get();
    run->threads = run->executor->threads();
    run->wait = eo.wait;
    run->isa = run->executor->kernels().name;
    return run;
  }
  if (in.micro_batches < 0 || in.micro_batches > 4096) {
    throw InputError("--micro-batches must be between 0 and 4096, got " + std::to_string(in.micro_batches));
  }
  if (in.micro_batch < 0 || in.micro_batch > 65536) {
    throw InputError("--micro-batch must be between 0 and 65536, got " + std::to_string(in.micro_batch));
  }
  const ModuleTree tree = load_module_tree(model_dir, quantize);
  // The split is checked before any weight is read: InputError naming the heads and the sizes that work.
  const ModuleTree plan_tree = world.tp > 1 ? shard_module_tree(tree, TensorSplit{0, world.tp, world.expert_parallel}) : tree;
  pin.batch_tokens = eo.max_batch_tokens;
  pin.threads = eo.threads;
  if (on_gpus_by_default) {
    // The run's own length (prompt + tokens to generate) sizes the KV cache, as on the host.
    if (eo.max_context > 0) pin.context = std::min<long long>(eo.max_context, tree.config().max_position_embeddings);
    run->device_note = "running on the " + std::to_string(cuda.gpus.size()) + " GPU(s) CUDA sees (" + cuda.gpus.front().name +
                       "); CUDA_VISIBLE_DEVICES= keeps a run on the CPU";
  }
  if (pin.context == 0) {
    throw InputError("--context 0 plans the weights only; a run needs room for its tokens: give --context N (the "
                     "prompt plus the tokens to generate, at most " +
                     std::to_string(tree.config().max_position_embeddings) + ")");
  }
  PlanOptions po = plan_options_from(pin, tree.config());
  // The executor computes in the checkpoint's dtype: plan for it.
  const WeightDType stored = checkpoint_weight_dtype(tree, po.request.dtype);
  check_run_dtype(in.plan, stored);
  po.request.dtype = stored;
  po.request.dtype_fixed = true;
  if (share.count > 1) {
    // The replica's accelerators are renumbered from 0: their GPUs follow them.
    const std::vector<DeviceId> all = po.request.budgets.accelerators();
    po.request.budgets = replica_budgets(po.request.budgets, share);
    if (po.accelerators.cuda) {
      const std::size_t k = all.size() / static_cast<std::size_t>(share.count);
      std::vector<int> mine;
      for (std::size_t i = 0; i < k; ++i) {
        const auto original = static_cast<std::size_t>(all[static_cast<std::size_t>(share.index) * k + i].ordinal());
        mine.push_back(original < po.accelerators.physical_gpu.size() ? po.accelerators.physical_gpu[original] : -1);
      }
      while (!mine.empty() && mine.back() < 0) mine.pop_back();  // past the GPUs: make_run_devices names them
      for (int& g : mine) g = std::max(g, 0);
      po.accelerators.physical_gpu = mine;
    }
  }
  Budgets run_budgets;  // every accelerator of a --tp/--pp run, before group_budgets
  if (in.plan.parallel()) {
    if (world.tp > 1 && po.fastest) {
      throw InputError("--strategy fastest ranks plans of whole layers; with " + std::string(world.group_flag()) + " give a strategy (" +
                       std::string(kStrategyChoices) + ")");
    }
    const std::size_t have = po.request.budgets.accelerators().size(), need = static_cast<std::size_t>(world.tp * world.pp);
    if (share.count > 1 && have < need) {  // the replica's share of the devices: name the total
      const std::size_t total = need * static_cast<std::size_t>(share.count);
      throw InputError(std::to_string(share.count) + " replicas (--replicas, or mpirun worker ranks on this machine) × " + world.group_flag() + " " +
                       std::to_string(world.tp) + " × --pp " + std::to_string(world.pp) + " need " + std::to_string(total) +
                       " devices but each replica has " + std::to_string(have) + " of " + std::to_string(have * static_cast<std::size_t>(share.count)) +
                       ": give " + (po.accelerators.cuda ? "--virtual-gpus " : "--virtual-devices ") + std::to_string(total) + " (or budgets for " + std::to_string(total) +
                       " devices in --max-memory / --devices), or fewer replicas or a smaller --tp/--pp");
    }
    run_budgets = po.request.budgets;
    po.request.budgets = group_budgets(po.request.budgets, world, po.accelerators.cuda);
  }
  const Plan plan = plan_for_group(world, [&] {
    return po.device_map_file ? plan_from_device_map(plan_tree, load_device_map_file(*po.device_map_file), po.request)
           : po.fastest        ? choose_fastest(tree, po.request, Objective::kThroughput, std::nullopt).ranked.front().plan
                               : plan_model(plan_tree, po.request);
  });
  if (world.tp > 1) {
    const ParallelPlan devices = parallel_plan(tree, plan, po.request, world.tp, world.pp, run_budgets, world.expert_parallel);
    return open_tensor_parallel(std::move(run), plan, po, world, eo, in, quantize_options, model_dir, devices);
  }
  // The devices get what the plan sized: its budgets (accelerate's strategies: max_memory for the
  // weights, the run buffers on top).
  run->devices = make_run_devices(run_capacities(plan), po.request.runtime.threads, host_available_memory(), po.accelerators,
                                   eo.wait);
  if (!po.device_note.empty()) run->device_note = po.device_note;
  ExecutorOptions xo = planned_executor_options(eo, plan, in);
  quantize_options(xo);
  run->executor = std::make_unique<Executor>(model_dir, plan.device_map, run->devices, xo);
  run->runner = run->executor.get();
  if (po.accelerators.cuda) {
    for (const Stage& s : run->executor->layout().stages) {
      if (s.device < 0 || static_cast<std::size_t>(s.device) >= po.accelerators.physical_gpu.size()) continue;
      const int g = po.accelerators.physical_gpu[static_cast<std::size_t>(s.device)];
      if (std::find(run->cuda_gpus.begin(), run->cuda_gpus.end(), g) == run->cuda_gpus.end()) run->cuda_gpus.push_back(g);
    }
  }
  run->threads = std::min(run->executor->threads(), run_thread_budget(eo.threads));
  run->wait = eo.wait;
  run->isa = run->executor->kernels().name;
  std::string buffers;
  for (const DeviceBuffers& b : run->executor->buffers().devices) {
    buffers += "run buffers on " + (b.device == kHostDevice ? std::string("host") : "device " + std::to_string(b.device)) +
               ": " + describe_buffers(b) +
               (b.layer_slots == 1 ? " (one streaming slot: two do not fit; each copy waits for the previous layer's "
                                     "compute, slower but it runs)"
                                   : "") +
               "\n";
  }
  run->plan_text = "budgets: " + po.request.budgets.to_string() + " (" + po.budgets_source + ")\n" + plan_to_table(plan) +
                   describe_layout(run->executor->layout()) + buffers + "micro-batches per forward: " +
                   std::to_string(run->executor->micro_batches()) + "\n";
  run->plan_json = plan_to_json(plan);
  run->plan = plan;
  run->plan_json["budgets_source"] = po.budgets_source;
  return run;
}

Json predict_run(const ModelRun& run, const std::string& model_dir, double prompt_tokens, double decode_positions,
                 std::int64_t batch) {
  // A tensor-parallel run's plan is one rank's, made on its shard.
  const int tp = run.tensor ? run.tensor->tp() : 1;
  const ModuleTree full = load_module_tree(model_dir, run.quantize);
  const ModuleTree tree = tp > 1 ? shard_module_tree(full, TensorSplit{0, tp, run.tensor->expert_parallel()}) : full;
  Plan plan;
  int n_acc = 0;
  if (run.plan) {
    plan = *run.plan;
    for (const DeviceId& d : plan.planned_budgets.accelerators()) n_acc = std::max(n_acc, d.ordinal() + 1);
    n_acc *= tp;  // every rank of a stage is a device with its share of the threads
  } else {  // one stage: the whole model computed by the host, its weights read in place
    PlanRequest r;
    r.budgets.set(DeviceId::cpu(), std::numeric_limits<std::uint32_t>::max() * 1024ull);
    r.runtime.context = tree.config().max_position_embeddings;
    r.runtime.threads = run.threads;
    WeightDType stored = WeightDType::kBF16;
    if (const ParamInfo* p = tree.find("model.embed_tokens.weight"); p && p->dtype) {
      parse_weight_dtype(dtype_torch_name(*p->dtype), &stored);
    }
    r.dtype = stored;
    DeviceMap all;
    all.set("", DeviceId::cpu());
    plan = plan_from_device_map(tree, all, r);
  }
  plan.runtime.batch = std::max<std::int64_t>(1, batch);
  // The run's threads as the plan split them (the host's), or the host run's.
  const int threads = run.plan ? plan.runtime.threads : run.threads;
  const PlanFacts facts = plan_facts(HostMeasurements(std::max(1, threads)), std::nullopt, std::max(1, threads), n_acc);
  Prediction p;
  try {
    PredictShape shape;
    shape.prompt_tokens = prompt_tokens;
    shape.decode_positions = decode_positions;
    shape.concurrency = facts.concurrency;
    shape.tensor_parallel = tp;
    if (run.executor) shape.micro_batches = run.executor->micro_batches();  // as the run splits its batches
    p = predict_plan(tree, plan, facts.facts, facts.shared_host, shape);
  } catch (const InputError&) {
    return nullptr;
  }
  Json j = prediction_to_json(p);
  j.erase("facts");  // flat enough for a CSV row
  j["facts_source"] = p.facts.empty() ? std::string() : p.facts.front().second.source;
  return j;
}

}  // namespace plexus
