// plexus deploy's planning: devices from the inventory, the plan on their memory, the numbers.
#include "deploy/deploy_plan.h"

#include <algorithm>
#include <optional>
#include <regex>

#include "comm/world_config.h"
#include "core/error.h"
#include "core/units.h"
#include "deploy/device_selection.h"
#include "deploy/engine_plan.h"
#include "deploy/escape.h"
#include "deploy/gpu_models.h"
#include "deploy/model_facts.h"
#include "exec/model_run.h"
#include "model/config.h"
#include "model/tensor_split.h"
#include "planner/planner.h"
#include "planner/weight_dtype.h"

namespace plexus::deploy {

namespace {

std::string free_list(const std::vector<SelectedGpu>& gpus) {
  std::string out;
  for (const SelectedGpu& g : gpus) {
    out += (out.empty() ? "" : ", ") + gib_text(g.memory_free_bytes) + " free";
  }
  return out;
}

// The planner's and the world's errors in deploy's terms: the plan's batch is --max-sequences,
// the budgets are the selected devices' free memory (not a --max-memory the user gave). The
// planner's advice after "; devices N allow ..." (or "; no accelerators are budgeted", or "The
// smallest budgets ...") is about this machine's --max-memory and --offload-disk, which a deployment
// does not take: cut, and deploy's own ways out said instead, for GPUs or for a CPU deployment.
std::string in_deploy_terms(const std::string& message, bool on_gpus) {
  static const std::regex batch_words(" tokens × batch ([0-9]+)");
  std::string m = std::regex_replace(message, batch_words, " tokens × $1 sequences");
  std::size_t cut = std::string::npos;
  for (const char* advice : {"; devices ", "; no accelerators are budgeted", ". The smallest budgets"}) cut = std::min(cut, m.find(advice));
  if (cut == std::string::npos) return m;
  return m.substr(0, cut) + (on_gpus ? ": select more GPUs (--devices, --auto-select), lower --context or --max-sequences, or quantise "
                                       "(--quantize q8_0)"
                                     : ": deploy to a host with more memory or with GPUs (--inventory of it), lower --context or "
                                       "--max-sequences, or quantise (--quantize q8_0)");
}

std::string layer_ranges(const std::vector<int>& layers) {
  if (layers.empty()) return "-";
  std::string out;
  std::size_t i = 0;
  while (i < layers.size()) {
    std::size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(layers[i]);
    if (j > i) out += "-" + std::to_string(layers[j]);
    i = j + 1;
  }
  return out;
}

struct Planner {
  const DeployRequest& req;
  const Inventory& inv;
  const ModuleTree* tree = nullptr;  // one rank's (sharded under --tp)
  WorldConfig world;
  PlanRequest base;

  // The plan on `gpus` (container numbering 0..k-1) or, without GPUs, on the host's memory.
  Plan plan_on(const std::vector<SelectedGpu>& gpus) const {
    PlanRequest r = base;
    Budgets b;
    if (gpus.empty()) {
      b.set(DeviceId::cpu(), inv.host.memory_available_bytes);
    } else {
      for (std::size_t i = 0; i < gpus.size(); ++i) b.set(DeviceId::accelerator(static_cast<int>(i)), gpus[i].memory_free_bytes);
    }
    r.budgets = world.tp * world.pp > 1 && !gpus.empty() ? group_budgets(b, world, true) : b;
    return plan_for_group(world, [&] { return plan_model(*tree, r); });
  }

  FitResult fit(const std::vector<SelectedGpu>& gpus) const {
    FitResult f;
    try {
      f.per_gpu_bytes = per_gpu_bytes(plan_on(gpus));
      f.fits = true;
    } catch (const InputError& e) {
      f.why = in_deploy_terms(e.what(), !gpus.empty());
    }
    return f;
  }

  static std::int64_t per_gpu_bytes(const Plan& plan) {
    std::int64_t most = 0;
    for (const DeviceReport& d : plan.devices) {
      if (d.device.is_accelerator()) most = std::max(most, d.total_bytes);
    }
    return most;
  }
};

// The GPU counts an engine can run the model on (auto-select tries only these).
bool count_allowed(const DeployRequest& req, std::int64_t heads, std::int64_t kv_heads, int k) {
  switch (req.api_type) {
    case ApiType::kPlexus: {
      const long long shape = req.plan.world().size();
      return shape <= 1 || k == shape;
    }
    case ApiType::kVllm: return true;  // its tensor-parallel size is chosen among k's divisors (vllm_tensor_parallel)
    // TGI shards the query heads over all k GPUs and the KV heads too, except a multi-query
    // model's single KV head, which every shard keeps whole (StarCoder, SantaCoder: multi_query).
    case ApiType::kTgi: return heads % k == 0 && (kv_heads == 1 || kv_heads % k == 0);
    case ApiType::kTei: return k == 1;
  }
  return false;
}

void check_gpu_count(const DeployRequest& req, std::int64_t heads, std::int64_t kv_heads, int k) {
  if (k == 0 || count_allowed(req, heads, kv_heads, k)) return;
  switch (req.api_type) {
    case ApiType::kPlexus: {
      const WorldConfig w = req.plan.world();
      throw InputError(std::string(w.group_flag()) + " " + std::to_string(w.tp) + " × --pp " + std::to_string(w.pp) +
                       " needs exactly " + std::to_string(w.size()) + " GPUs, but " +
                       std::to_string(k) + " are selected: name that many with --devices, or use --auto-select");
    }
    case ApiType::kVllm: return;
    case ApiType::kTgi:
      throw InputError("--api-type tgi shards every layer over all " + std::to_string(k) + " selected GPUs (--num-shard " +
                       std::to_string(k) + "), but the model's " + std::to_string(heads) + " attention heads / " +
                       std::to_string(kv_heads) + " KV heads do not divide by " + std::to_string(k) +
                       " (TGI splits both, except a single KV head, which each shard keeps whole)" +
                       ": select a count of GPUs that divides them with --devices, or use --auto-select");
    case ApiType::kTei:
      throw InputError("--api-type tei serves a model on one GPU, but " + std::to_string(k) +
                       " are selected: name one with --devices, or use --auto-select");
  }
}

// ": its devices 0,1 are virtual CPU devices ..." when the inventory's devices are (detect under
// PLEXUS_VIRTUAL_DEVICES / --virtual-devices), said beside "no GPU".
std::string virtual_devices_note(const Inventory& inv) {
  std::string ids;
  for (const DeviceInfo& d : inv.devices) {
    if (d.kind == DeviceKind::kVirtual) ids += (ids.empty() ? "" : ",") + std::to_string(d.index);
  }
  if (ids.empty()) return "";
  return ": its devices " + ids + " are virtual CPU devices (the host split by PLEXUS_VIRTUAL_DEVICES / --virtual-devices), not GPUs";
}

// --devices on an inventory without GPUs: what to add.
[[noreturn]] void throw_no_gpu_to_name(const DeployRequest& req, const Inventory& inv) {
  std::string named;
  for (long long i : *req.devices) named += (named.empty() ? "" : ",") + std::to_string(i);
  const bool here = req.inventory_file.empty();
  throw InputError("--devices " + named + ": " + (here ? "this machine has no GPU" : "--inventory " + one_line(req.inventory_file) + " lists no GPU") +
                   virtual_devices_note(inv) + ". " +
                   (here ? "Without --inventory, deploy takes the devices from `plexus detect` here, but they are the target host's: "
                         : "") +
                   "add --inventory FILE with what `plexus detect --json` printed on the GPU host (examples/gpu-host.json is one with "
                   "two H100s), or leave --devices out for a CPU deployment");
}

}  // namespace

DeviceSelection select_devices(const DeployRequest& req, const std::vector<SelectedGpu>& gpus, const Inventory& inv,
                               std::int64_t heads, std::int64_t kv_heads, const FitCheck& fit) {
  if (req.devices && req.auto_select) throw InputError("--devices and --auto-select both choose the GPUs: give one of them");
  DeviceSelection s;
  if (req.devices && gpus.empty()) {
    throw_no_gpu_to_name(req, inv);
  } else if (req.devices) {
    s = select_named(gpus, *req.devices);
  } else if (req.auto_select && gpus.empty()) {
    s = select_all(gpus, inv.host.logical_cores);
    s.reason = "--auto-select: no GPU in the inventory to pick from" + virtual_devices_note(inv) + "; the deployment computes on the "
               "host's CPUs (" + std::to_string(inv.host.logical_cores) + " threads)";
  } else if (req.auto_select) {
    s = auto_select(gpus, fit, [&](int k) { return count_allowed(req, heads, kv_heads, k); });
  } else if (req.api_type == ApiType::kTei && gpus.size() > 1) {
    // TEI serves on one GPU: the one with the most free memory.
    s = auto_select(gpus, fit, [](int k) { return k == 1; });
    s.reason += " (TEI serves on one GPU)";
  } else {
    s = select_all(gpus, inv.host.logical_cores);
    if (gpus.empty()) s.reason = "no GPU in the inventory" + virtual_devices_note(inv) + "; the deployment computes on the host's CPUs (" +
                                 std::to_string(inv.host.logical_cores) + " threads)";
  }
  check_gpu_count(req, heads, kv_heads, static_cast<int>(s.gpus.size()));
  return s;
}

namespace {

// /dev/shm: 2 GiB for one device, 8 GiB per GPU with several, at most half the host's memory.
std::int64_t shm_bytes(int gpus, std::uint64_t host_total) {
  std::int64_t shm = gpus > 1 ? kShmPerGpu * gpus : kShmSingle;
  if (host_total > 0) shm = std::min<std::int64_t>(shm, static_cast<std::int64_t>(host_total / 2));
  return shm;
}

// plexus serve / batch: the plan plexus's own loader and planner make (the container re-plans the
// same way on the GPUs it sees).
void plan_for_plexus(const DeployRequest& req, const Inventory& inv, const std::vector<SelectedGpu>& gpus, DeployPlan& out) {
  PlanNumbers& p = out.numbers;
  const int host_cores = std::max(1, inv.host.logical_cores);
  if (req.plan.strategy == "fastest") {
    throw InputError("--strategy fastest ranks plans on this host's measured speed; deploy plans for the target: give " +
                     std::string(kStrategyChoices));
  }
  std::optional<ModuleTree> loaded;
  try {
    loaded.emplace(load_module_tree(req.model, quantize_type(req.plan)));
  } catch (const InputError& e) {
    // plexus serve runs what plexus loads; the other engines are sized without its loader.
    const std::string m = e.what();
    if (m.find("unknown architecture") == std::string::npos) throw;
    throw InputError(m + ". --api-type plexus deploys what plexus serve runs; vLLM or TGI serve more architectures, and "
                     "deploy sizes theirs from config.json and the safetensors headers: --api-type vllm or tgi");
  }
  const ModuleTree& full = *loaded;
  const ModelConfig& config = full.config();
  Planner planner{req, inv, nullptr, req.plan.world(), {}};
  std::optional<ModuleTree> sharded;  // one rank's shard under --tp (InputError when --tp cannot split the heads)
  if (planner.world.tp > 1) sharded.emplace(shard_module_tree(full, TensorSplit{0, planner.world.tp, planner.world.expert_parallel}));
  planner.tree = sharded ? &*sharded : &full;
  PlanRequest& r = planner.base;
  r.strategy = parse_strategy_or_throw(req.plan.strategy);
  if (req.plan.dtype) {
    r.dtype = parse_weight_dtype_or_throw(*req.plan.dtype, "--dtype");
  } else if (config.torch_dtype) {
    parse_weight_dtype(dtype_torch_name(*config.torch_dtype), &r.dtype);
  }
  r.budgets_from_user = false;  // the devices' free memory, as `plexus serve` plans in the container
  r.allow_disk = false;
  r.runtime.context = req.plan.context;
  r.runtime.batch = req.max_sequences;
  r.runtime.prefill_chunk = req.plan.batch_tokens;
  r.runtime.threads = host_cores;
  check_sequences_per_pass(req.max_sequences, req.plan.batch_tokens);
  const FitCheck fit = [&](const std::vector<SelectedGpu>& pick) { return planner.fit(pick); };
  out.devices = select_devices(req, gpus, inv, config.num_heads, config.num_kv_heads, fit);
  Plan plan;
  try {
    plan = planner.plan_on(out.devices.gpus);
  } catch (const InputError& e) {
    const std::string where = out.devices.gpus.empty() ? "the host's " + gib_text(inv.host.memory_available_bytes) +
                                                             " of available memory"
                                                       : std::string(out.devices.gpus.size() == 1 ? "GPU " : "GPUs ") +
                                                             gpu_list(out.devices.gpus) + " (" + free_list(out.devices.gpus) + ")";
    throw InputError("the plan does not fit " + where + ": " + in_deploy_terms(e.what(), !out.devices.gpus.empty()));
  }
  const int k = static_cast<int>(out.devices.gpus.size());
  p.context = plan.runtime.context;  // clamped to max_position_embeddings
  p.gpu_bytes_needed = k ? Planner::per_gpu_bytes(plan) : 0;
  std::int64_t host_held = 0;
  for (const DeviceReport& d : plan.devices) {
    if (d.device.kind() == TargetKind::kCpu) host_held += d.total_bytes;
  }
  p.host_memory_bytes = host_held + kProcessBytes + kProcessBytesPerGpu * k;
  p.tensor_parallel = planner.world.tp;
  p.pipeline_parallel = planner.world.pp;
  p.weights_bytes = plan.model_bytes;
  // The flags that make `plexus serve` / `plexus batch` run this plan in the container.
  if (req.plan.strategy != "stages") p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--strategy", req.plan.strategy});
  if (req.plan.dtype) p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--dtype", *req.plan.dtype});
  if (req.plan.quantize) p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--quantize", *req.plan.quantize});
  if (planner.world.tp > 1) {
    p.plexus_plan_args.insert(p.plexus_plan_args.end(), {planner.world.group_flag(), std::to_string(planner.world.tp)});
  }
  if (planner.world.pp > 1) p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--pp", std::to_string(planner.world.pp)});
  p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--context", std::to_string(p.context)});

  std::string layers;
  for (const DeviceReport& d : plan.devices) {
    if (d.layers.empty()) continue;
    if (!layers.empty()) layers += " | ";
    layers += d.device.to_string() + ": " + layer_ranges(d.layers);
  }
  const std::string shape = planner.world.tp * planner.world.pp > 1
                                ? std::string(planner.world.expert_parallel ? "plexus ep " : "plexus tp ") + std::to_string(planner.world.tp) + " × pp " + std::to_string(planner.world.pp) + ", "
                                : "";
  p.summary = shape + std::string(strategy_name(plan.strategy)) + " over " +
              (k ? std::string(k == 1 ? "GPU " : "GPUs ") + gpu_list(out.devices.gpus) : std::string("the CPU")) + " (" +
              std::to_string(config.num_layers) + " layers, " + layers + "), " + std::string(weight_dtype_name(plan.dtype)) +
              ", context " + std::to_string(p.context) + ", " + std::to_string(req.max_sequences) + " sequences, " +
              (k ? format_bytes(static_cast<std::uint64_t>(p.gpu_bytes_needed)) + " on the fullest GPU"
                 : format_bytes(static_cast<std::uint64_t>(host_held)) + " of host memory");
}

}  // namespace

int cpus_for(int host_cores, int selected_gpus, int inventory_gpus) {
  const int cores = std::max(1, host_cores);
  const int share = selected_gpus > 0 && inventory_gpus > 0 ? cores * selected_gpus / inventory_gpus : cores;
  const int reserve = std::max(1, cores / 16);
  return std::max(1, std::min(share, cores - reserve));
}

DeployPlan plan_deployment(const DeployRequest& req, const Inventory& inv) {
  DeployPlan out;
  const int host_cores = std::max(1, inv.host.logical_cores);
  if (req.nodes < 1) throw InputError("--nodes must be at least 1, got " + std::to_string(req.nodes));
  if (req.nodes > 1 && req.target != Target::kSlurm) {
    throw InputError("--nodes " + std::to_string(req.nodes) + " spreads a job over nodes, which only --target slurm does (--target " +
                     std::string(target_name(req.target)) + " runs on one host)");
  }
  if (req.nodes > 1 && (req.api_type == ApiType::kTgi || req.api_type == ApiType::kTei)) {
    throw InputError("--nodes " + std::to_string(req.nodes) + ": " + std::string(api_type_label(req.api_type)) +
                     " serves from one node; use --nodes 1 (or --api-type plexus / vllm)");
  }
  if (req.max_sequences < 1) throw InputError("--max-sequences must be at least 1");
  if (req.plan.context < 1) throw InputError("--context must be at least 1 for a deployment (the server keeps KV cache for it)");

  const std::string arch = model_architecture(req.model);
  out.embedding_model = is_embedding_architecture(arch);
  if (req.api_type == ApiType::kTei && !out.embedding_model) {
    throw InputError("--api-type tei serves embedding models, but " + req.model + "/config.json names " +
                     (arch.empty() ? std::string("no embedding architecture") : arch) +
                     " (a causal LM): use --api-type plexus, vllm or tgi");
  }
  if (req.api_type != ApiType::kTei && out.embedding_model) {
    throw InputError(req.model + "/config.json names " + arch + ", an embedding model, which --api-type " +
                     std::string(api_type_name(req.api_type)) + " does not deploy here (plexus serve loads causal LMs only): use --api-type tei");
  }
  const std::vector<SelectedGpu> gpus = inventory_gpus(inv, "--inventory");
  PlanNumbers& p = out.numbers;
  p.model_bytes = model_disk_bytes(req.model);
  p.max_sequences = req.max_sequences;
  if (req.api_type == ApiType::kPlexus) {
    plan_for_plexus(req, inv, gpus, out);
  } else {
    plan_for_engine(req, inv, gpus, out);
  }
  p.shm_bytes = shm_bytes(static_cast<int>(out.devices.gpus.size()), inv.host.memory_total_bytes);

  const int k = static_cast<int>(out.devices.gpus.size());
  out.cpus = cpus_for(host_cores, k, static_cast<int>(gpus.size()));
  if (k == 0) {
    if (req.gpus_per_node) throw InputError("--gpus-per-node " + std::to_string(*req.gpus_per_node) + ": the deployment has no GPU (CPU only)");
    out.gpus_per_node = 0;
  } else if (req.gpus_per_node) {
    const int g = *req.gpus_per_node;
    if (g < 1) throw InputError("--gpus-per-node must be at least 1, got " + std::to_string(g));
    const bool replicas = req.target == Target::kSlurm && req.api_type == ApiType::kPlexus;
    if (replicas ? g % k != 0 : g != k) {
      throw InputError("--gpus-per-node " + std::to_string(g) + " does not match the " + std::to_string(k) + " selected GPU(s): " +
                       (replicas ? "under slurm it must be a multiple of them (replicas per node)"
                                 : "give " + std::to_string(k) + " (or leave it out)" +
                                       (req.target == Target::kSlurm ? "" : "; only --target slurm runs several replicas per node")));
    }
    out.gpus_per_node = g;
  } else {
    out.gpus_per_node = k;
  }
  if (req.target == Target::kSlurm) {
    // --cpus-per-task: batch.sbatch runs rank 0 and one worker rank per replica on a node
    // (docs/deploy.md#slurm), so the node's share is split between them (serve.sbatch's one task
    // gets the same).
    const int replicas = k > 0 ? std::max(1, out.gpus_per_node / k) : 1;
    out.cpus = std::max(1, cpus_for(host_cores, out.gpus_per_node, static_cast<int>(gpus.size())) / (replicas + 1));
  }
  out.cuda_architectures = cuda_architectures(out.devices.gpus);
  if (req.gpu_type && req.target != Target::kSlurm) {
    throw InputError("--gpu-type names the GPU type of Slurm's --gres request: only --target slurm takes it");
  }
  if (req.target == Target::kSlurm) {
    const SlurmGpuType t = slurm_gpu_type(out.devices.gpus, req.gpu_type);
    out.gpu_type = t.type;
    out.gpu_type_reason = t.reason;
  }
  return out;
}

}  // namespace plexus::deploy
