// vLLM, TGI and TEI deployments sized from the checkpoint's own description, not plexus's plan.
#include "deploy/engine_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/units.h"
#include "deploy/device_selection.h"
#include "deploy/escape.h"
#include "deploy/model_facts.h"
#include "exec/model_run.h"

namespace plexus::deploy {

namespace {

constexpr std::int64_t kLogitBytesPerToken = 4;   // × vocab: one float32 logit per token of the vocabulary
constexpr std::int64_t kHiddenBytesPerToken = 32;  // × hidden: 16 hidden-sized 2-byte buffers (residual, q/k/v/o, MLP, ...)
constexpr std::int64_t kTeiDefaultPositions = 512;
constexpr double kMaxSizedBytes = 1152921504606846976.0;  // 1 EiB: beyond it, the config's numbers are wrong

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::string bytes_text(std::int64_t b) { return format_bytes(static_cast<std::uint64_t>(b)); }

std::string memory_text(const EngineMemory& m) {
  return bytes_text(m.total()) + " (weights " + bytes_text(m.weights) + " + KV cache " + bytes_text(m.kv_cache) + " + activations " +
         bytes_text(m.activations) + ")";
}

// What a plan's bytes with the margins need of a GPU: 5 % and 1 GiB for the CUDA context, CUDA
// graphs and the sampler, which the sizing does not count.
double with_margins(std::int64_t bytes) { return static_cast<double>(bytes) * kVllmMargin + static_cast<double>(kVllmFixedMargin); }

struct VllmFraction {
  bool fits = false;
  double utilization = kVllmDefaultUtilization;
  std::string why;  // !fits
};

// vLLM's fraction of each GPU's total memory: the bytes with the margins, at least vLLM's default
// 0.90, at most 0.95 and at most what is free on the fullest GPU (vLLM refuses to start when less
// is free than the fraction asks).
VllmFraction vllm_fraction(std::int64_t per_gpu, const std::vector<SelectedGpu>& gpus) {
  VllmFraction out;
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
  if (smallest_total == 0) {
    out.fits = true;
    return out;
  }
  const double need = with_margins(per_gpu) / static_cast<double>(smallest_total);
  const double usable = std::min(kVllmMaxUtilization, std::floor(free_fraction * 100.0) / 100.0);
  out.utilization = std::min(std::max(kVllmDefaultUtilization, std::ceil(need * 100.0) / 100.0), usable);
  out.fits = out.utilization >= need;
  if (!out.fits) {
    const std::string per_gpu_text = gib_text(static_cast<std::uint64_t>(per_gpu));
    const std::string margins_text = gib_text(static_cast<std::uint64_t>(with_margins(per_gpu)));
    char buf[320];
    if (usable < kVllmMaxUtilization) {
      std::snprintf(buf, sizeof buf, "--gpu-memory-utilization: vLLM needs %.2f of each GPU (%s per GPU, %s with the margins), but GPU %d has only %s of its %s free",
                    std::ceil(need * 100.0) / 100.0, per_gpu_text.c_str(), margins_text.c_str(), fullest->index,
                    gib_text(fullest->memory_free_bytes).c_str(), gib_text(fullest->memory_total_bytes).c_str());
    } else {
      std::snprintf(buf, sizeof buf, "--gpu-memory-utilization: vLLM needs %.2f of the smallest GPU (%s per GPU, %s with the margins), above the 0.95 plexus allows",
                    std::ceil(need * 100.0) / 100.0, per_gpu_text.c_str(), margins_text.c_str());
    }
    out.why = buf;
  }
  return out;
}

struct Shape {
  int tp = 1;
  int pp = 1;
};

// The engine's parallel shape on k GPUs of a node (1 × 1 on CPUs). vLLM: within a node a
// tensor-parallel group; across nodes (slurm) and for what does not divide the heads, pipeline
// stages (vLLM's docs: TP = GPUs per node, PP = nodes). TGI: every GPU a shard.
Shape engine_shape(const DeployRequest& req, const AttentionShape& a, int k) {
  if (k == 0) return {};
  if (req.api_type == ApiType::kTgi) return {k, 1};
  const int node_gpus = req.nodes > 1 ? req.gpus_per_node.value_or(k) : k;
  const int tp = vllm_tensor_parallel(node_gpus, a.heads.value, a.kv_heads.value);
  return {tp, node_gpus / tp * req.nodes};
}

// The fit of vLLM / TGI on `pick` (the host's memory when empty).
FitResult generator_fit(const DeployRequest& req, const Inventory& inv, std::int64_t weights, const AttentionShape& a,
                        std::int64_t context, const std::vector<SelectedGpu>& pick) {
  const Shape shape = engine_shape(req, a, static_cast<int>(pick.size()));
  const EngineMemory m = engine_memory(weights, a, shape.tp, shape.pp, context, req.max_sequences, req.plan.batch_tokens);
  FitResult f;
  f.per_gpu_bytes = m.total();
  if (pick.empty()) {
    f.fits = static_cast<std::uint64_t>(m.total()) <= inv.host.memory_available_bytes;
    if (!f.fits) {
      f.why = "the model needs " + memory_text(m) + " of host memory, the host has " + gib_text(inv.host.memory_available_bytes) +
              " available: deploy to a host with more memory or with GPUs (--inventory of it), or lower --context or --max-sequences";
    }
    return f;
  }
  if (req.api_type == ApiType::kVllm) {
    const VllmFraction v = vllm_fraction(m.total(), pick);
    f.fits = v.fits;
    f.why = v.why;
    return f;
  }
  const double need = with_margins(m.total());
  for (const SelectedGpu& g : pick) {
    if (static_cast<double>(g.memory_free_bytes) < need) {
      f.why = "TGI needs " + memory_text(m) + " per GPU, " + gib_text(static_cast<std::uint64_t>(need)) +
              " with the margins, but GPU " + std::to_string(g.index) + " has " + gib_text(g.memory_free_bytes) + " free";
      return f;
    }
  }
  f.fits = true;
  return f;
}

void plan_tei(const DeployRequest& req, const Inventory& inv, const std::vector<SelectedGpu>& gpus, const Json& config,
              const std::string& arch, DeployPlan& out) {
  // Encoders keep no KV cache: the weights and TEI's batch buffers on one GPU.
  PlanNumbers& p = out.numbers;
  const WeightBytes w = read_weight_bytes(req.model);
  const std::int64_t need = w.bytes + kTeiBatchBytes;
  const FitCheck fit = [&](const std::vector<SelectedGpu>& pick) {
    FitResult f;
    f.fits = static_cast<std::int64_t>(pick.front().memory_free_bytes) >= need;
    f.per_gpu_bytes = need;
    if (!f.fits) f.why = "the model needs " + gib_text(static_cast<std::uint64_t>(need)) + " (its weights + TEI's batch buffers), GPU " +
                         std::to_string(pick.front().index) + " has " + gib_text(pick.front().memory_free_bytes) + " free";
    return f;
  };
  out.devices = select_devices(req, gpus, inv, 0, 0, fit);
  if (!out.devices.gpus.empty() && !fit(out.devices.gpus).fits) {
    throw InputError("the plan does not fit GPU " + gpu_list(out.devices.gpus) + ": " + fit(out.devices.gpus).why);
  }
  const std::optional<ConfigNumber> positions = max_positions(config);
  p.context = std::min<std::int64_t>(req.plan.context, positions ? positions->value : kTeiDefaultPositions);
  const int k = static_cast<int>(out.devices.gpus.size());
  p.gpu_bytes_needed = k == 0 ? 0 : need;
  p.weights_bytes = w.bytes;
  p.host_memory_bytes = kProcessBytes + kProcessBytesPerGpu * k + (k == 0 ? w.bytes : 0);
  p.summary = std::string("TEI on ") + (k ? "GPU " + gpu_list(out.devices.gpus) : std::string("the CPU")) + ": " + arch + ", " +
              bytes_text(w.bytes) + " of weights, up to " + std::to_string(p.context) + " tokens";
  out.sizing = arch + " from config.json and the safetensors headers: " + bytes_text(w.bytes) + " of weights (" + w.source +
               "); " + (positions ? positions->key + " " + std::to_string(positions->value)
                                  : "no position limit in config.json (TEI's default " + std::to_string(kTeiDefaultPositions) + ")");
}

void plan_generator(const DeployRequest& req, const Inventory& inv, const std::vector<SelectedGpu>& gpus, const Json& config,
                    const std::string& arch, DeployPlan& out) {
  PlanNumbers& p = out.numbers;
  const std::string where = one_line(req.model) + "/config.json";
  const AttentionShape a = read_attention_shape(config, where);
  const WeightBytes w = read_weight_bytes(req.model);
  const std::optional<ConfigNumber> positions = max_positions(config);
  p.context = positions ? std::min<std::int64_t>(req.plan.context, positions->value) : req.plan.context;
  check_sequences_per_pass(req.max_sequences, req.plan.batch_tokens);
  const FitCheck fit = [&](const std::vector<SelectedGpu>& pick) { return generator_fit(req, inv, w.bytes, a, p.context, pick); };
  out.devices = select_devices(req, gpus, inv, a.heads.value, a.kv_heads.value, fit);
  const int k = static_cast<int>(out.devices.gpus.size());
  const FitResult f = fit(out.devices.gpus);
  if (!f.fits) {
    if (k == 0) throw InputError("the deployment does not fit the host: " + f.why);
    if (req.api_type == ApiType::kVllm) {
      throw InputError(f.why + ": select other or more GPUs (--devices, --auto-select) or lower --context / --max-sequences");
    }
    throw InputError("the plan does not fit " + std::string(k == 1 ? "GPU " : "GPUs ") + gpu_list(out.devices.gpus) + ": " + f.why +
                     ": select other or more GPUs (--devices, --auto-select), or lower --context or --max-sequences");
  }
  const Shape shape = engine_shape(req, a, k);
  const EngineMemory m = engine_memory(w.bytes, a, shape.tp, shape.pp, p.context, req.max_sequences, req.plan.batch_tokens);
  p.tensor_parallel = shape.tp;
  p.pipeline_parallel = shape.pp;
  if (req.api_type == ApiType::kVllm && k > 0) p.gpu_memory_utilization = vllm_fraction(m.total(), out.devices.gpus).utilization;
  p.gpu_bytes_needed = k ? m.total() : 0;
  p.weights_bytes = w.bytes;
  p.host_memory_bytes = kProcessBytes + kProcessBytesPerGpu * k + (k == 0 ? m.total() : 0);

  const std::string on = k ? std::string(k == 1 ? " over GPU " : " over GPUs ") + gpu_list(out.devices.gpus) : std::string(" on the CPU");
  const std::string engine = req.api_type == ApiType::kVllm ? "vLLM tensor-parallel " + std::to_string(shape.tp) + " × pipeline-parallel " +
                                                                  std::to_string(shape.pp)
                                                            : "TGI " + std::to_string(shape.tp) + " shard(s)";
  p.summary = engine + on + ": " + arch + ", " + bytes_text(w.bytes) + " of weights, context " + std::to_string(p.context) + ", " +
              std::to_string(req.max_sequences) + " sequences, " + memory_text(m) + (k ? " per GPU" : " of host memory");
  out.sizing = arch + " from config.json and the safetensors headers: " + bytes_text(w.bytes) + " of weights (" + w.source +
               "); KV cache " + bytes_text(a.kv_bytes_per_token()) + " per token = " + a.text() + "; " +
               (positions ? positions->key + " " + std::to_string(positions->value) + " positions"
                          : "no position limit in config.json (--context " + std::to_string(p.context) + " as given)") +
               "; activations from " + a.hidden.key + " " + std::to_string(a.hidden.value) + " and " + a.vocab.key + " " +
               std::to_string(a.vocab.value);
}

}  // namespace

EngineMemory engine_memory(std::int64_t weight_bytes, const AttentionShape& a, int tp, int pp, std::int64_t context, int sequences,
                           std::int64_t batch_tokens) {
  // config.json's numbers are the user's: their product is checked before it is formed exactly.
  const double kv = 2.0 * static_cast<double>(a.layers.value) * static_cast<double>(a.kv_heads.value) *
                    static_cast<double>(a.head_dim.value) * kKvElementBytes * static_cast<double>(context) * sequences;
  const double act = static_cast<double>(batch_tokens) *
                     (kLogitBytesPerToken * static_cast<double>(a.vocab.value) + kHiddenBytesPerToken * static_cast<double>(a.hidden.value));
  if (kv + act + static_cast<double>(weight_bytes) > kMaxSizedBytes) {
    throw InputError("config.json's numbers (" + a.text() + ", " + a.vocab.key + " " + std::to_string(a.vocab.value) +
                     ") give more than 1 EiB of memory: check them");
  }
  EngineMemory m;
  m.weights = ceil_div(weight_bytes, static_cast<std::int64_t>(tp) * pp);
  m.kv_cache = 2 * ceil_div(a.layers.value, pp) * ceil_div(a.kv_heads.value, tp) * a.head_dim.value * kKvElementBytes * context * sequences;
  m.activations = batch_tokens * (kLogitBytesPerToken * a.vocab.value + kHiddenBytesPerToken * a.hidden.value);
  return m;
}

int vllm_tensor_parallel(int gpus, std::int64_t heads, std::int64_t kv_heads) {
  for (int d = gpus; d > 1; --d) {
    if (gpus % d != 0 || heads % d != 0) continue;
    if (kv_heads % d == 0 || d % kv_heads == 0) return d;
  }
  return 1;
}

void plan_for_engine(const DeployRequest& req, const Inventory& inv, const std::vector<SelectedGpu>& gpus, DeployPlan& out) {
  if (req.plan.strategy != "stages" || req.plan.dtype || req.plan.quantize) {
    const std::string flag = req.plan.dtype ? "--dtype" : req.plan.quantize ? "--quantize" : "--strategy";
    throw InputError(flag + " chooses how plexus plans and runs the model; " + std::string(api_type_label(req.api_type)) +
                     " loads the checkpoint as it is stored, and deploy sizes it from config.json and the safetensors headers: "
                     "leave " + flag + " out (or use --api-type plexus)");
  }
  if (req.plan.parallel()) {
    throw InputError("--tp / --pp / --ep choose plexus's own parallel shape; for --api-type " + std::string(api_type_name(req.api_type)) +
                     " deploy derives the engine's from the selected GPUs: leave them out");
  }
  require_model_directory(req.model);
  const Json config = read_json_file(req.model + "/config.json");
  const std::string arch = model_architecture(req.model);
  const std::string name = arch.empty() ? std::string("the model") : arch;
  if (req.api_type == ApiType::kTei) {
    plan_tei(req, inv, gpus, config, name, out);
  } else {
    plan_generator(req, inv, gpus, config, name, out);
  }
}

}  // namespace plexus::deploy
