// Strategy dispatch, custom-map validation and the per-device report.
#include "planner/planner.h"

#include <algorithm>
#include <array>
#include <optional>
#include <map>
#include <unordered_map>

#include "core/checked.h"
#include "core/error.h"
#include "core/nearest_name.h"
#include "core/units.h"
#include "planner/report_text.h"
#include "planner/accelerate_planner.h"
#include "planner/gpt2_device_map.h"
#include "planner/host_experts.h"
#include "planner/memory_estimate.h"
#include "planner/plan_fit.h"
#include "planner/plan_report.h"
#include "planner/moe_reads.h"
#include "planner/run_buffers.h"
#include "planner/stage_layout.h"
#include "planner/sized_tree.h"
#include "planner/stage_planner.h"

namespace plexus {
namespace {

std::string device_list(const std::vector<DeviceId>& ds) {
  std::string s;
  for (const DeviceId& d : ds) s += (s.empty() ? "" : ",") + d.to_string();
  return s;
}

// "needs X; accelerators allow Y; …; way out" for a model whose weights reach disk unasked.
[[noreturn]] void throw_does_not_fit(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r, const Plan& plan) {
  std::int64_t kv = 0;
  for (const DeviceReport& d : plan.devices) kv += d.kv_cache_bytes;
  const std::vector<DeviceId> accels = r.budgets.accelerators();
  std::int64_t act = 0;  // scratch and streaming of the devices that compute
  for (const DeviceReport& d : plan.devices) act += d.activation_bytes + d.streaming_bytes;
  std::string msg = "model needs " + format_bytes(static_cast<std::uint64_t>(plan.model_bytes + kv)) + " (" +
                    format_bytes(static_cast<std::uint64_t>(plan.model_bytes)) + " of " +
                    std::string(weight_dtype_name(r.dtype)) + " weights";
  if (kv > 0) {
    msg += " + " + format_bytes(static_cast<std::uint64_t>(kv)) + " KV cache for " + std::to_string(r.runtime.context) +
           " tokens × batch " + std::to_string(r.runtime.batch);
  }
  if (act > 0 && !accels.empty()) {
    msg += ", plus " + format_bytes(static_cast<std::uint64_t>(act)) + " of scratch and streaming buffers";
  }
  msg += "); ";
  if (accels.empty()) msg += "no accelerators are budgeted";
  else msg += "devices " + device_list(accels) + " allow " + format_bytes(r.budgets.accelerator_total()) + " in total";
  const auto cpu = r.budgets.get(DeviceId::cpu());
  msg += cpu ? ", cpu allows " + format_bytes(*cpu) : ", no cpu offload";
  msg += ": add cpu=… to --max-memory, allow disk offload (--offload-disk)";
  if (r.dtype != WeightDType::kInt4 && !r.dtype_fixed) {
    // A planning estimate: runs compute in the checkpoint's dtype (generate refuses another).
    const WeightDType smaller = r.dtype == WeightDType::kInt8 ? WeightDType::kInt4 : WeightDType::kInt8;
    const std::int64_t s = SizedTree::build(tree, smaller).total_bytes();
    msg += ", or plan for a quantized checkpoint with `plexus plan --dtype " + std::string(weight_dtype_name(smaller)) + "` (" +
           format_bytes(static_cast<std::uint64_t>(s)) + " of weights; plexus runs a checkpoint in its own dtype)";
  }
  if (r.runtime.context > 0) msg += ", or lower --context/--max-sequences";
  if (r.strategy == Strategy::kStages) msg += ". " + smallest_budgets_text(tree, sized, r);
  throw InputError(msg);
}

void check_device_map(const ModuleTree& tree, const DeviceMap& map, const PlanRequest& r) {
  // Every entry names a module or parameter of the model.
  for (const auto& [prefix, dev] : map.entries()) {
    bool hit = false;
    for (const ParamInfo& p : tree.params()) hit = hit || prefix_covers(prefix, p.name);
    if (!hit) {
      throw InputError("device map entry '" + prefix + "' names no module of this model (" +
                       std::string(arch_name(tree.config().arch)) + ", e.g. model.embed_tokens, model.layers.0, "
                       "model.norm, lm_head)");
    }
    if (dev.kind() != TargetKind::kDisk && !r.budgets.has(dev)) {
      throw InputError("device map entry '" + prefix + "' names device " + dev.to_string() +
                       ", which has no budget here (devices: " + r.budgets.to_string() +
                       "); give it one with --max-memory or map the module elsewhere");
    }
  }
  // Every parameter covered exactly once.
  for (const ParamInfo& p : tree.params()) {
    std::vector<std::string> hits;
    for (const auto& e : map.entries()) {
      if (prefix_covers(e.first, p.name)) hits.push_back(e.first.empty() ? "\"\"" : e.first);
    }
    if (hits.empty()) {
      throw InputError("device map gives no device for parameter '" + p.name + "': add an entry for '" + p.module +
                       "' or one of its parents");
    }
    if (hits.size() > 1) {
      std::string h;
      for (const auto& x : hits) h += (h.empty() ? "" : ", ") + x;
      throw InputError("device map covers parameter '" + p.name + "' more than once (entries " + h +
                       "); keep one of them");
    }
  }
  // A decoder layer is never split.
  std::map<int, DeviceId> layer_dev;
  for (const ParamInfo& p : tree.params()) {
    if (p.layer < 0) continue;
    const DeviceId d = *map.device_of(p.name);
    auto [it, inserted] = layer_dev.emplace(p.layer, d);
    if (!inserted && !(it->second == d)) {
      throw InputError("device map splits decoder layer " + std::to_string(p.layer) + " across devices " +
                       it->second.to_string() + " and " + d.to_string() + "; map '" +
                       ModuleTree::layer_prefix(p.layer) + "' as a whole");
    }
  }
}

}  // namespace

std::string_view strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kSequential: return "sequential";
    case Strategy::kBalanced: return "balanced";
    case Strategy::kBalancedLow0: return "balanced_low_0";
    case Strategy::kAuto: return "auto";
    case Strategy::kStages: return "stages";
  }
  return "?";
}

bool parse_strategy(std::string_view t, Strategy* out) {
  for (Strategy s : {Strategy::kSequential, Strategy::kBalanced, Strategy::kBalancedLow0, Strategy::kAuto,
                     Strategy::kStages}) {
    if (t == strategy_name(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

Strategy parse_strategy_or_throw(std::string_view t) {
  Strategy s;
  if (!parse_strategy(t, &s)) {
    throw InputError("--strategy: unknown strategy '" + std::string(t) +
                     "'; use stages (plexus), accelerate's sequential, balanced, balanced_low_0, auto, or fastest (the best "
                     "predicted of them all)" +
                     did_you_mean(std::string(t), {"stages", "sequential", "balanced", "balanced_low_0", "auto", "fastest"}));
  }
  return s;
}

bool is_accelerate_strategy(Strategy s) {
  switch (s) {
    case Strategy::kSequential:
    case Strategy::kBalanced:
    case Strategy::kBalancedLow0:
    case Strategy::kAuto: return true;
    case Strategy::kStages: return false;
  }
  return false;
}

namespace {

int run_accelerator_count(const Budgets& b) {
  int n = 0;
  for (const DeviceId& d : b.accelerators()) n = std::max(n, d.ordinal() + 1);
  return n;
}

DeviceId report_device(int device) { return device == kHostDevice ? DeviceId::cpu() : DeviceId::accelerator(device); }

bool buffers_on_top(const PlanRequest& r) { return is_accelerate_strategy(r.strategy) && r.budgets_from_user; }

// The budget a device's weights and run buffers must fit; none for no limit.
std::optional<std::uint64_t> limit_of(const PlanRequest& r, const DeviceId& d) {
  if (buffers_on_top(r) || d.kind() == TargetKind::kDisk) return std::nullopt;
  return r.budgets.get(d);
}

using report_text::fb;

}  // namespace

RunShape run_shape(const PlanRequest& r, const ModelConfig& c) {
  RunShape s;
  s.context = std::min<std::int64_t>(r.runtime.context, c.max_position_embeddings);
  s.batch = r.runtime.batch;
  s.batch_tokens = r.runtime.prefill_chunk;
  s.host_threads = std::max(1, r.runtime.threads);
  s.accelerator_threads = threads_per_accelerator(s.host_threads, run_accelerator_count(r.budgets));
  s.accelerator_kernel_scratch = r.runtime.accelerator_kernel_scratch;
  return s;
}

namespace {
RunShape run_shape_or_none(const PlanRequest& r, const ModelConfig& c) {
  RunShape s = run_shape(r, c);
  if (r.runtime.context <= 0) s.context = 0;
  return s;
}
}  // namespace

void fill_report(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r, Plan* plan) {
  plan->model_bytes = sized.total_bytes();
  plan->active_bytes = active_weight_bytes(sized, tree.config());
  plan->active_parameters = active_parameters(tree);
  plan->parameters = 0;
  for (const ParamInfo& p : tree.params()) plan->parameters += p.tied_to ? 0 : p.numel();
  plan->placement = expand_placement(plan->device_map, tree);
  const ModelConfig& c = tree.config();

  std::vector<DeviceReport> reports;
  auto report_for = [&reports](DeviceId d) -> DeviceReport& {
    for (DeviceReport& x : reports) {
      if (x.device == d) return x;
    }
    DeviceReport x;
    x.device = d;
    reports.push_back(x);
    return reports.back();
  };
  for (const DeviceBudget& b : plan->planned_budgets.list()) report_for(b.device).budget_bytes = b.bytes;

  std::map<DeviceId, std::int64_t> expert_bytes;  // per device: the experts' bytes it holds
  std::unordered_map<std::string, DeviceId> where;
  for (const auto& [name, dev] : plan->placement) where.emplace(name, dev);
  const auto& params = tree.params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    const DeviceId d = plan->placement[i].second;
    DeviceReport& rep = report_for(d);
    if (!p.tied_to) {
      rep.weights_bytes += sized.size_of(p.name);
    } else if (!(where.at(*p.tied_to) == d)) {
      rep.weights_bytes += sized.size_of(*p.tied_to);  // a copy of the shared storage lives here too
    }
    if (p.layer >= 0 && (rep.layers.empty() || rep.layers.back() != p.layer)) {
      if (std::find(rep.layers.begin(), rep.layers.end(), p.layer) == rep.layers.end()) rep.layers.push_back(p.layer);
    }
    if (is_expert_param(c, p)) expert_bytes[d] += sized.size_of(p.name);
    if (p.module == "model.embed_tokens") rep.holds_embedding = true;
    if (p.module == "lm_head") rep.holds_lm_head = true;
  }

  // Run buffers, sized exactly as the executor allocates them, on the devices that compute.
  if (plan->runtime.context > 0) {
    const StageLayout layout = make_stage_layout(tree, plan->device_map, run_accelerator_count(r.budgets));
    RunBuffers buffers = size_run_buffers(c, sized, layout, run_shape(r, c));
    const std::vector<int> one_slot = fit_streaming_slots(&buffers, [&](int device) -> std::int64_t {
      const DeviceId id = report_device(device);
      const auto limit = limit_of(r, id);
      return limit ? static_cast<std::int64_t>(*limit) - report_for(id).weights_bytes : -1;
    });
    for (const DeviceBuffers& b : buffers.devices) {
      DeviceReport& rep = report_for(report_device(b.device));
      rep.kv_cache_bytes = b.kv_cache;
      rep.activation_bytes = b.scratch();
      rep.streaming_bytes = b.streaming();
      rep.streaming_slots = b.layer_slots;
      rep.run_buffers_bytes = b.total();
    }
    for (int d : one_slot) {
      plan->notes.push_back("device " + report_device(d).to_string() +
                            " streams offloaded layers through one slot (two do not fit): each copy waits for the "
                            "previous layer's compute, slower but it runs");
    }
  }
  const std::int64_t embed_bytes = sized.size_of("model.embed_tokens");
  const ParamInfo* head = tree.find("lm_head.weight");
  const bool tied = head != nullptr && head->tied_to.has_value();
  for (DeviceReport& rep : reports) {
    rep.read_bytes_per_token = rep.weights_bytes + rep.kv_cache_bytes;
    if (rep.holds_embedding && !(tied && rep.holds_lm_head)) rep.read_bytes_per_token -= embed_bytes;
    if (const std::int64_t e = expert_bytes[rep.device]; e > 0) {  // a token runs k of each layer's E experts
      rep.read_bytes_per_token -= e - e / c.moe.num_experts * c.moe.experts_per_token;
    }
    rep.total_bytes = rep.weights_bytes + rep.run_buffers_bytes;
    if (rep.device.kind() == TargetKind::kDisk) continue;
    const auto given = r.budgets.get(rep.device);
    if (buffers_on_top(r)) {
      rep.capacity_bytes = std::max<std::uint64_t>(given.value_or(0), static_cast<std::uint64_t>(rep.total_bytes));
    } else {
      rep.capacity_bytes = given;
    }
  }
  std::stable_sort(reports.begin(), reports.end(),
                   [](const DeviceReport& a, const DeviceReport& b) { return a.device < b.device; });
  plan->devices = std::move(reports);
}

Budgets run_capacities(const Plan& plan) {
  Budgets b;
  for (const DeviceReport& d : plan.devices) {
    if (d.capacity_bytes) b.set(d.device, *d.capacity_bytes);
  }
  for (const DeviceBudget& x : plan.planned_budgets.list()) {
    if (!b.has(x.device) && x.device.kind() != TargetKind::kDisk) b.set(x.device, x.bytes);
  }
  return b;
}

namespace {

// A context beyond the model's positions cannot be used: plan for what the run can hold.
void clamp_context(const ModuleTree& tree, PlanRequest* r, Plan* plan) {
  const std::int64_t max_pos = tree.config().max_position_embeddings;
  if (r->runtime.context <= max_pos) return;
  plan->notes.push_back("--context " + std::to_string(r->runtime.context) + " is beyond the model's " + std::to_string(max_pos) +
                        " positions (max_position_embeddings): KV cache planned for " + std::to_string(max_pos) + " tokens");
  r->runtime.context = max_pos;
}

}  // namespace

namespace {
Plan place_model(const ModuleTree& tree, const PlanRequest& r_in);

// --n-cpu-moe: the experts of the mixture-of-experts layers among the first N go to "cpu" (their
// bytes taken from its budget first); the rest of the model is planned without them; the map
// then names each layer's experts apart, and the report covers the whole model.
Plan plan_with_host_experts(const ModuleTree& tree, const PlanRequest& r) {
  const ModelConfig& c = tree.config();
  const SizedTree sized = SizedTree::build(tree, r.dtype);
  std::vector<int> layers;
  std::int64_t bytes = 0;
  for (int l = 0; l < std::min<int>(r.cpu_moe_layers, static_cast<int>(c.num_layers)); ++l) {
    if (!c.moe_layer(l)) continue;
    layers.push_back(l);
    bytes += layer_expert_bytes(sized, c, l);
  }
  std::vector<ParamInfo> rest;
  for (const ParamInfo& p : tree.params()) {
    if (!(is_expert_param(c, p) && p.layer < r.cpu_moe_layers)) rest.push_back(p);
  }
  PlanRequest without = r;
  without.cpu_moe_layers = 0;
  if (layers.empty()) return place_model(tree, without);  // the first N layers are all dense (mlp_only_layers)
  if (const auto cpu = r.budgets.get(DeviceId::cpu())) {
    if (static_cast<std::uint64_t>(bytes) > *cpu) {
      throw InputError("the experts of layers " + format_ranges(layers) + " need " + fb(bytes) + " of host memory but cpu's budget is " +
                       format_bytes(*cpu) + ": raise cpu in --max-memory or keep fewer layers' experts there (--n-cpu-moe)");
    }
    without.budgets.set(DeviceId::cpu(), *cpu - static_cast<std::uint64_t>(bytes));
  }
  Plan plan = place_model(ModuleTree::from_params(c, rest), without);
  for (const int l : layers) plan.device_map.set(experts_module(c, l), DeviceId::cpu());
  if (const auto cpu = r.budgets.get(DeviceId::cpu())) plan.planned_budgets.set(DeviceId::cpu(), *cpu);
  plan.host_expert_layers = layers;
  std::vector<std::string> notes = plan.notes;
  plan.notes.clear();
  fill_report(tree, sized, r, &plan);
  notes.push_back("the experts of layers " + format_ranges(layers) + " (" + fb(bytes) +
                  ") are kept in host memory and computed on the CPU (--n-cpu-moe " + std::to_string(layers.back() + 1) + ")");
  plan.notes.insert(plan.notes.begin(), notes.begin(), notes.end());
  if (!overfull(plan).empty()) throw_overfull(tree, sized, r, plan);
  return plan;
}

// Whether host-kept experts are worth trying for this request: a mixture of experts, accelerators
// to keep the rest on, and a cpu budget to hold the experts.
bool host_experts_possible(const ModuleTree& tree, const PlanRequest& r) {
  return tree.config().is_moe() && r.cpu_moe_layers == 0 && !r.budgets.accelerators().empty() && r.budgets.has(DeviceId::cpu());
}

std::optional<Plan> try_host_experts(const ModuleTree& tree, const PlanRequest& r, int n) {
  PlanRequest q = r;
  q.cpu_moe_layers = n;
  try {
    return plan_with_host_experts(tree, q);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

std::string gib(double b) { return format_bytes(static_cast<std::uint64_t>(std::max(0.0, b))); }

// stages without --n-cpu-moe: as planned, unless the model does not fit the accelerators and
// keeping the experts of the first N layers on the host (the smallest N that fits, else all)
// moves fewer bytes per decode step than offloading whole layers — or the offload cannot be
// planned at all.
Plan stages_choosing_host_experts(const ModuleTree& tree, const PlanRequest& r) {
  std::optional<Plan> offload;
  std::optional<InputError> why;
  try {
    offload = place_model(tree, r);
  } catch (const InputError& e) {
    why = e;
  }
  if (offload && fits_accelerators(tree, *offload)) return *offload;
  const int layers = static_cast<int>(tree.config().num_layers);
  const std::optional<int> smallest = smallest_cpu_moe_layers(tree, r);
  std::optional<Plan> host = try_host_experts(tree, r, smallest.value_or(layers));
  if (!host) {
    if (offload) return *offload;
    throw *why;
  }
  const double host_bytes = slow_path_bytes_per_step(tree, *host);
  const int n = n_cpu_moe_of(*host);
  const std::string step = "a decode step (" + std::to_string(r.runtime.batch) + " token(s))";
  if (offload) {
    const double offload_bytes = slow_path_bytes_per_step(tree, *offload);
    if (!(host_bytes < offload_bytes)) {
      offload->notes.push_back("keeping experts in host memory (--n-cpu-moe " + std::to_string(n) + ") would move " + gib(host_bytes) +
                               " per " + step + ", no less than the " + gib(offload_bytes) + " offloading copies: not chosen");
      return *offload;
    }
    host->notes.push_back("the model does not fit the accelerators: stages keeps experts in host memory (an automatic --n-cpu-moe " +
                          std::to_string(n) + "), whose routed experts " + step + " reads there are " + gib(host_bytes) +
                          ", where offloading whole layers would copy " + gib(offload_bytes) +
                          " (--n-cpu-moe 0 plans that offload)");
  } else {
    host->notes.push_back("the model does not fit the accelerators, nor offloaded by whole layers: stages keeps experts in host "
                          "memory (an automatic --n-cpu-moe " + std::to_string(n) + "); " + step + " reads " + gib(host_bytes) +
                          " of them there");
  }
  return *host;
}

}  // namespace

std::optional<int> smallest_cpu_moe_layers(const ModuleTree& tree, const PlanRequest& r) {
  if (!host_experts_possible(tree, r)) return std::nullopt;
  return smallest_fitting_cpu_moe_layers(tree, static_cast<int>(tree.config().num_layers),
                                         [&](int n) { return try_host_experts(tree, r, n); });
}

Plan plan_model(const ModuleTree& tree, const PlanRequest& r) {
  if (r.cpu_moe_layers > 0) return plan_with_host_experts(tree, r);
  if (r.strategy == Strategy::kStages && r.auto_host_experts && host_experts_possible(tree, r)) {
    return stages_choosing_host_experts(tree, r);
  }
  return place_model(tree, r);
}

namespace {
Plan place_model(const ModuleTree& tree, const PlanRequest& r_in) {
  PlanRequest r = r_in;
  if (r.runtime.context < 0 || r.runtime.batch < 1 || r.runtime.prefill_chunk < 1) {
    throw InputError("runtime budget: context must be >= 0 and batch >= 1 (got context " +
                     std::to_string(r.runtime.context) + ", batch " + std::to_string(r.runtime.batch) + ")");
  }
  Plan plan;
  plan.strategy = r.strategy;
  plan.dtype = r.dtype;
  clamp_context(tree, &r, &plan);
  plan.runtime = r.runtime;
  const SizedTree sized = SizedTree::build(tree, r.dtype);
  check_plan_sizes(tree.config(), r.dtype, sized.total_bytes(), r.runtime.context, r.runtime.batch, r.runtime.prefill_chunk);
  // accelerate sees GPT2LMHeadModel's own modules (transformer.wte, transformer.wpe, …): its map
  // is made there and run in the engine's names.
  const bool gpt2 = tree.config().arch == Arch::kGpt2 && is_accelerate_strategy(r.strategy);
  const SizedTree hf_sized = gpt2 ? SizedTree::build(gpt2_hf_module_tree(tree), r.dtype, gpt2_hf_sized_options()) : SizedTree();
  const SizedTree& accelerate_sized = gpt2 ? hf_sized : sized;
  switch (r.strategy) {
    case Strategy::kSequential:
      plan.planned_budgets = r.budgets;
      plan.device_map = accelerate_infer_device_map(accelerate_sized, plan.planned_budgets);
      break;
    case Strategy::kBalanced:
    case Strategy::kAuto:
    case Strategy::kBalancedLow0:
      plan.planned_budgets =
          accelerate_balanced_memory(accelerate_sized, r.budgets, r.strategy == Strategy::kBalancedLow0, r.budgets_from_user);
      plan.device_map = accelerate_infer_device_map(accelerate_sized, plan.planned_budgets);
      break;
    case Strategy::kStages: {
      plan.planned_budgets = r.budgets;
      // Plan, size the run buffers exactly, and give a device that overflows that much more
      // reserve; reserves only grow, so this ends (usually after one or two rounds).
      std::vector<std::int64_t> extra(static_cast<std::size_t>(run_accelerator_count(r.budgets)), 0);
      const std::vector<std::string> first_notes = plan.notes;
      for (int round = 0; round < 12; ++round) {
        StagePlan sp = plan_stages(sized, tree.config(), r.budgets, run_shape_or_none(r, tree.config()), extra);
        plan.device_map = accelerate_clean_device_map(sp.map);
        plan.notes = first_notes;
        plan.notes.insert(plan.notes.end(), sp.notes.begin(), sp.notes.end());
        fill_report(tree, sized, r, &plan);
        bool grew = false;
        for (const DeviceReport* d : overfull(plan)) {
          if (!d->device.is_accelerator()) continue;
          extra[static_cast<std::size_t>(d->device.ordinal())] += d->total_bytes - static_cast<std::int64_t>(*d->capacity_bytes);
          grew = true;
        }
        if (!grew) break;
      }
      // A plan that overflows a budget, or that sends weights to disk unasked, cannot run as is.
      const auto cannot_run = [&](const Plan& p) {
        if (!overfull(p).empty()) return true;
        for (const DeviceReport& d : p.devices) {
          if (!r.allow_disk && d.device.kind() == TargetKind::kDisk && d.weights_bytes > 0) return true;
        }
        return false;
      };
      if (cannot_run(plan)) {
        if (std::optional<Plan> spread = spread_layer_segments(tree, sized, r)) {
          spread->notes.insert(spread->notes.begin(), first_notes.begin(), first_notes.end());
          plan = std::move(*spread);
        }
      }
      if (cannot_run(plan)) {  // last resort: everything streams through the first device
        Plan small = smallest_plan(tree, sized, r);
        if (!cannot_run(small)) {
          small.notes = first_notes;
          small.notes.push_back("the accelerators hold no weights: every module is offloaded and streamed through one device");
          plan = std::move(small);
        }
      }
      break;
    }
  }
  if (gpt2) {
    plan.hf_device_map = plan.device_map;
    plan.device_map = gpt2_engine_device_map(*plan.hf_device_map, tree.config(), &plan.notes);
  }
  if (r.strategy != Strategy::kStages) fill_report(tree, sized, r, &plan);
  bool on_disk = false;
  for (const DeviceReport& d : plan.devices) on_disk = on_disk || (d.device.kind() == TargetKind::kDisk && d.weights_bytes > 0);
  if (on_disk) {
    if (r.strategy == Strategy::kStages && !r.allow_disk) throw_does_not_fit(tree, sized, r, plan);
    if (is_accelerate_strategy(r.strategy)) {
      plan.notes.push_back("accelerate offloads to disk when cpu is full or absent; weights on disk are read back "
                           "for every forward pass");
    }
  }
  if (!overfull(plan).empty()) throw_overfull(tree, sized, r, plan);
  if (buffers_on_top(r)) {
    for (const DeviceReport& d : plan.devices) {
      if (d.run_buffers_bytes > 0 && d.budget_bytes && d.total_bytes > static_cast<std::int64_t>(*d.budget_bytes)) {
        plan.notes.push_back("max_memory limits the weights (accelerate's meaning): device " + d.device.to_string() +
                             " holds " + fb(d.weights_bytes) + " of weights within its " + format_bytes(*d.budget_bytes) +
                             " and the run's buffers on top, " + fb(d.total_bytes) + " in all");
      }
    }
  }
  return plan;
}
}  // namespace

Plan plan_from_device_map(const ModuleTree& tree, const DeviceMap& map, const PlanRequest& r_in) {
  if (map.empty()) throw InputError("device map is empty: map at least \"\" (the whole model) to a device");
  const bool hf_names = tree.config().arch == Arch::kGpt2 && gpt2_hf_named(map);
  std::vector<std::string> map_notes;
  const DeviceMap engine_map = hf_names ? gpt2_engine_device_map(map, tree.config(), &map_notes) : map;
  check_device_map(tree, engine_map, r_in);
  Plan plan;
  PlanRequest r = r_in;
  r.strategy = Strategy::kStages;  // a custom map's budgets hold its weights and run buffers
  plan.strategy = r_in.strategy;
  plan.dtype = r.dtype;
  clamp_context(tree, &r, &plan);
  plan.runtime = r.runtime;
  plan.planned_budgets = r.budgets;
  plan.device_map = engine_map;
  if (hf_names) plan.hf_device_map = map;
  plan.notes.insert(plan.notes.end(), map_notes.begin(), map_notes.end());
  plan.custom = true;
  const SizedTree sized = SizedTree::build(tree, r.dtype);
  check_plan_sizes(tree.config(), r.dtype, sized.total_bytes(), r.runtime.context, r.runtime.batch, r.runtime.prefill_chunk);
  fill_report(tree, sized, r, &plan);
  for (const DeviceReport& d : plan.devices) {
    if (d.device.kind() == TargetKind::kDisk && d.weights_bytes > 0 && !r.allow_disk && !r.budgets.has(d.device)) {
      throw InputError("device map sends weights to disk but disk offload is not enabled: pass --offload-disk");
    }
    if (!d.capacity_bytes) continue;
    if (d.total_bytes > static_cast<std::int64_t>(*d.capacity_bytes)) {
      throw InputError("device map puts " + need_text(d) + " on device " + d.device.to_string() + " but its budget is " +
                       format_bytes(*d.capacity_bytes) + ": move layers elsewhere, raise its --max-memory entry to " +
                       d.device.to_string() + "=" + format_budget(static_cast<std::uint64_t>(d.total_bytes)) +
                       ", or lower --context/--batch/--batch-tokens");
    }
  }
  return plan;
}

}  // namespace plexus
