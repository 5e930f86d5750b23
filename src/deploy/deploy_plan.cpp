// plexus deploy's planning: devices from the inventory, the plan on their memory, the numbers.
#include "deploy/deploy_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "comm/world_config.h"
#include "core/error.h"
#include "core/json.h"
#include "core/units.h"
#include "deploy/device_selection.h"
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
// the budgets are the selected devices' free memory (not a --max-memory the user gave).
// The planner's advice after "; devices N allow ..." is about this machine's --max-memory and
// offload, which a deployment does not take: cut, and deploy's own ways out said instead.
std::string in_deploy_terms(const std::string& message) {
  std::string m = message;
  const auto cut = m.find("; devices ");
  if (cut != std::string::npos) {
    m = m.substr(0, cut) + ": select more GPUs (--devices, --auto-select), lower --context or --max-sequences, or quantise "
                           "(--quantize q8_0, --dtype int8)";
  }
  return m;
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
      f.why = in_deploy_terms(e.what());
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
bool count_allowed(const DeployRequest& req, const ModelConfig* config, int k) {
  switch (req.api_type) {
    case ApiType::kPlexus: {
      const long long shape = req.plan.tensor_parallel * req.plan.pipeline_parallel;
      return shape <= 1 || k == shape;
    }
    case ApiType::kVllm: return true;
    case ApiType::kTgi: return config && config->num_heads % k == 0 && config->num_kv_heads % k == 0;
    case ApiType::kTei: return k == 1;
  }
  return false;
}

void check_gpu_count(const DeployRequest& req, const ModelConfig* config, int k) {
  if (k == 0 || count_allowed(req, config, k)) return;
  switch (req.api_type) {
    case ApiType::kPlexus:
      throw InputError("--tp " + std::to_string(req.plan.tensor_parallel) + " × --pp " + std::to_string(req.plan.pipeline_parallel) +
                       " needs exactly " + std::to_string(req.plan.tensor_parallel * req.plan.pipeline_parallel) + " GPUs, but " +
                       std::to_string(k) + " are selected: name that many with --devices, or use --auto-select");
    case ApiType::kVllm: return;
    case ApiType::kTgi:
      throw InputError("--api-type tgi shards every layer over all " + std::to_string(k) + " selected GPUs (--num-shard " +
                       std::to_string(k) + "), but the model's " + std::to_string(config->num_heads) + " attention heads / " +
                       std::to_string(config->num_kv_heads) + " KV heads do not divide by " + std::to_string(k) +
                       ": select a count of GPUs that divides them with --devices, or use --auto-select");
    case ApiType::kTei:
      throw InputError("--api-type tei serves a model on one GPU, but " + std::to_string(k) +
                       " are selected: name one with --devices, or use --auto-select");
  }
}

DeviceSelection select(const DeployRequest& req, const std::vector<SelectedGpu>& gpus, const Inventory& inv,
                       const ModelConfig* config, const FitCheck& fit) {
  if (req.devices && req.auto_select) throw InputError("--devices and --auto-select both choose the GPUs: give one of them");
  DeviceSelection s;
  if (req.devices) {
    s = select_named(gpus, *req.devices);
  } else if (req.auto_select) {
    s = auto_select(gpus, fit, [&](int k) { return count_allowed(req, config, k); });
  } else if (req.api_type == ApiType::kTei && gpus.size() > 1) {
    // TEI serves on one GPU: the one with the most free memory.
    s = auto_select(gpus, fit, [](int k) { return k == 1; });
    s.reason += " (TEI serves on one GPU)";
  } else {
    s = select_all(gpus, inv.host.logical_cores);
  }
  check_gpu_count(req, config, static_cast<int>(s.gpus.size()));
  return s;
}

// vLLM's fraction of each GPU's total memory: the plan's bytes with the margins, at least vLLM's
// default 0.90, at most 0.95 and at most what is free on the fullest GPU (vLLM refuses to start
// when less is free than the fraction asks).
double vllm_utilization(std::int64_t per_gpu, const std::vector<SelectedGpu>& gpus) {
  std::uint64_t smallest_total = gpus.front().memory_total_bytes;
  double free_fraction = 1.0;
  const SelectedGpu* fullest = &gpus.front();
  for (const SelectedGpu& g : gpus) {
    smallest_total = std::min(smallest_total, g.memory_total_bytes);
    if (g.memory_total_bytes > 0) {
      const double f = static_cast<double>(g.memory_free_bytes) / static_cast<double>(g.memory_total_bytes);
      if (f < free_fraction) {
        free_fraction = f;
        fullest = &g;
      }
    }
  }
  if (smallest_total == 0) return kVllmDefaultUtilization;
  const double need = (static_cast<double>(per_gpu) * kVllmMargin + static_cast<double>(kVllmFixedMargin)) /
                      static_cast<double>(smallest_total);
  const double usable = std::min(kVllmMaxUtilization, std::floor(free_fraction * 100.0) / 100.0);
  const double u = std::min(std::max(kVllmDefaultUtilization, std::ceil(need * 100.0) / 100.0), usable);
  if (u < need) {
    char buf[256];
    if (usable < kVllmMaxUtilization) {
      std::snprintf(buf, sizeof buf, "--gpu-memory-utilization: vLLM needs %.2f of each GPU (the plan's %s with its margins), but GPU %d has only %s of its %s free",
                    std::ceil(need * 100.0) / 100.0, gib_text(static_cast<std::uint64_t>(per_gpu)).c_str(), fullest->index,
                    gib_text(fullest->memory_free_bytes).c_str(), gib_text(fullest->memory_total_bytes).c_str());
    } else {
      std::snprintf(buf, sizeof buf, "--gpu-memory-utilization: vLLM needs %.2f of the smallest GPU (the plan's %s with its margins), above the 0.95 plexus allows",
                    std::ceil(need * 100.0) / 100.0, gib_text(static_cast<std::uint64_t>(per_gpu)).c_str());
    }
    throw InputError(std::string(buf) + ": select other or more GPUs (--devices, --auto-select) or lower --context / --max-sequences");
  }
  return u;
}

std::int64_t shm_bytes(int gpus, std::uint64_t host_total) {
  std::int64_t shm = gpus > 1 ? kShmPerGpu * gpus : kShmSingle;
  if (host_total > 0) shm = std::min<std::int64_t>(shm, static_cast<std::int64_t>(host_total / 2));
  return shm;
}

}  // namespace

int cpus_for(int host_cores, int selected_gpus, int inventory_gpus) {
  const int cores = std::max(1, host_cores);
  const int share = selected_gpus > 0 && inventory_gpus > 0 ? cores * selected_gpus / inventory_gpus : cores;
  const int reserve = std::max(1, cores / 16);
  return std::max(1, std::min(share, cores - reserve));
}

int vllm_tensor_parallel(int gpus, std::int64_t heads, std::int64_t kv_heads) {
  for (int d = gpus; d > 1; --d) {
    if (gpus % d != 0 || heads % d != 0) continue;
    if (kv_heads % d == 0 || d % kv_heads == 0) return d;
  }
  return 1;
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

  if (req.api_type == ApiType::kTei) {
    // TEI: no plexus plan (plexus does not load encoders); the weights as the checkpoint holds
    // them plus TEI's batch buffers must fit one GPU.
    const Json config = read_json_file(req.model + "/config.json");
    const std::int64_t need = p.model_bytes + kTeiBatchBytes;
    const FitCheck fit = [&](const std::vector<SelectedGpu>& pick) {
      FitResult f;
      f.fits = static_cast<std::int64_t>(pick.front().memory_free_bytes) >= need;
      f.per_gpu_bytes = need;
      if (!f.fits) f.why = "the model needs " + gib_text(static_cast<std::uint64_t>(need)) + " (checkpoint + TEI's batch buffers), GPU " +
                           std::to_string(pick.front().index) + " has " + gib_text(pick.front().memory_free_bytes) + " free";
      return f;
    };
    out.devices = select(req, gpus, inv, nullptr, fit);
    if (!out.devices.gpus.empty() && !fit(out.devices.gpus).fits) {
      throw InputError("the plan does not fit GPU " + gpu_list(out.devices.gpus) + ": " + fit(out.devices.gpus).why);
    }
    p.context = std::min<std::int64_t>(req.plan.context, json_int_or(config, "max_position_embeddings", 512, req.model + "/config.json"));
    p.gpu_bytes_needed = out.devices.gpus.empty() ? 0 : need;
    const int k = static_cast<int>(out.devices.gpus.size());
    p.host_memory_bytes = kProcessBytes + kProcessBytesPerGpu * k + (k == 0 ? p.model_bytes : 0);
    p.shm_bytes = shm_bytes(k, inv.host.memory_total_bytes);
    p.summary = std::string("TEI on ") + (k ? "GPU " + gpu_list(out.devices.gpus) : std::string("the CPU")) + ": " + arch + ", " +
                format_bytes(static_cast<std::uint64_t>(p.model_bytes)) + " of weights, up to " + std::to_string(p.context) + " tokens";
  } else {
    if (req.plan.strategy == "fastest") {
      throw InputError("--strategy fastest ranks plans on this host's measured speed; deploy plans for the target: give " +
                       std::string(kStrategyChoices));
    }
    const ModuleTree full = load_module_tree(req.model, quantize_type(req.plan));
    const ModelConfig& config = full.config();
    Planner planner{req, inv, nullptr, make_world_config(req.plan.tensor_parallel, req.plan.pipeline_parallel, 1), {}};
    if (req.api_type != ApiType::kPlexus && planner.world.tp * planner.world.pp > 1) {
      throw InputError("--tp / --pp choose plexus's own parallel shape; for --api-type " + std::string(api_type_name(req.api_type)) +
                       " deploy derives the engine's from the selected GPUs: leave them out");
    }
    std::optional<ModuleTree> sharded;  // one rank's shard under --tp (InputError when --tp cannot split the heads)
    if (planner.world.tp > 1) sharded.emplace(shard_module_tree(full, TensorSplit{0, planner.world.tp}));
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
    if (req.max_sequences > req.plan.batch_tokens) {
      throw InputError("--max-sequences " + std::to_string(req.max_sequences) + " is above the " + std::to_string(req.plan.batch_tokens) +
                       " tokens of a forward pass: lower --max-sequences");
    }
    const FitCheck fit = [&](const std::vector<SelectedGpu>& pick) { return planner.fit(pick); };
    out.devices = select(req, gpus, inv, &config, fit);
    Plan plan;
    try {
      plan = planner.plan_on(out.devices.gpus);
    } catch (const InputError& e) {
      const std::string where = out.devices.gpus.empty() ? "the host's " + gib_text(inv.host.memory_available_bytes) +
                                                               " of available memory"
                                                         : std::string(out.devices.gpus.size() == 1 ? "GPU " : "GPUs ") +
                                                               gpu_list(out.devices.gpus) + " (" + free_list(out.devices.gpus) + ")";
      throw InputError("the plan does not fit " + where + ": " + in_deploy_terms(e.what()));
    }
    const int k = static_cast<int>(out.devices.gpus.size());
    p.context = plan.runtime.context;  // clamped to max_position_embeddings
    p.gpu_bytes_needed = k ? Planner::per_gpu_bytes(plan) : 0;
    std::int64_t host_held = 0;
    for (const DeviceReport& d : plan.devices) {
      if (d.device.kind() == TargetKind::kCpu) host_held += d.total_bytes;
    }
    p.host_memory_bytes = host_held + kProcessBytes + kProcessBytesPerGpu * k;
    p.shm_bytes = shm_bytes(k, inv.host.memory_total_bytes);
    const int per_node = req.gpus_per_node.value_or(k);
    switch (req.api_type) {
      case ApiType::kPlexus:
        p.tensor_parallel = planner.world.tp;
        p.pipeline_parallel = planner.world.pp;
        break;
      case ApiType::kVllm:
        if (k > 0) {
          // Within a node a tensor-parallel group; across nodes (slurm) and for what does not
          // divide the heads, pipeline stages (vLLM's docs: TP = GPUs per node, PP = nodes).
          const int node_gpus = req.nodes > 1 ? per_node : k;
          p.tensor_parallel = vllm_tensor_parallel(node_gpus, config.num_heads, config.num_kv_heads);
          p.pipeline_parallel = node_gpus / p.tensor_parallel * req.nodes;
          p.gpu_memory_utilization = vllm_utilization(p.gpu_bytes_needed, out.devices.gpus);
        }
        break;
      case ApiType::kTgi:
        p.tensor_parallel = std::max(1, k);
        break;
      case ApiType::kTei: break;
    }
    // The flags that make `plexus serve` / `plexus batch` run this plan in the container.
    if (req.plan.strategy != "stages") p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--strategy", req.plan.strategy});
    if (req.plan.dtype) p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--dtype", *req.plan.dtype});
    if (req.plan.quantize) p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--quantize", *req.plan.quantize});
    if (planner.world.tp > 1) p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--tp", std::to_string(planner.world.tp)});
    if (planner.world.pp > 1) p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--pp", std::to_string(planner.world.pp)});
    p.plexus_plan_args.insert(p.plexus_plan_args.end(), {"--context", std::to_string(p.context)});

    std::string layers;
    for (const DeviceReport& d : plan.devices) {
      if (d.layers.empty()) continue;
      if (!layers.empty()) layers += " | ";
      layers += d.device.to_string() + ": " + layer_ranges(d.layers);
    }
    std::string shape;
    switch (req.api_type) {
      case ApiType::kPlexus:
        shape = planner.world.tp * planner.world.pp > 1 ? "plexus tp " + std::to_string(planner.world.tp) + " × pp " +
                                                             std::to_string(planner.world.pp) + ", "
                                                       : "";
        break;
      case ApiType::kVllm:
        shape = "vLLM tensor-parallel " + std::to_string(p.tensor_parallel) + " × pipeline-parallel " + std::to_string(p.pipeline_parallel) +
                ", memory sized by plexus's ";
        break;
      case ApiType::kTgi: shape = "TGI " + std::to_string(p.tensor_parallel) + " shard(s), memory sized by plexus's "; break;
      case ApiType::kTei: break;
    }
    p.summary = shape + std::string(strategy_name(plan.strategy)) + " over " +
                (k ? std::string(k == 1 ? "GPU " : "GPUs ") + gpu_list(out.devices.gpus) : std::string("the CPU")) + " (" +
                std::to_string(config.num_layers) + " layers, " + layers + "), " + std::string(weight_dtype_name(plan.dtype)) +
                ", context " + std::to_string(p.context) + ", " + std::to_string(req.max_sequences) + " sequences, " +
                (k ? format_bytes(static_cast<std::uint64_t>(p.gpu_bytes_needed)) + " on the fullest GPU"
                   : format_bytes(static_cast<std::uint64_t>(host_held)) + " of host memory");
  }

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
  return out;
}

}  // namespace plexus::deploy
