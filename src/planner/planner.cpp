// Strategy dispatch, custom-map validation and the per-device report.
#include "planner/planner.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/checked.h"
#include "core/error.h"
#include "core/units.h"
#include "planner/accelerate_planner.h"
#include "planner/memory_estimate.h"
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
[[noreturn]] void throw_does_not_fit(const ModuleTree& tree, const PlanRequest& r, const Plan& plan) {
  std::int64_t kv = 0;
  for (const DeviceReport& d : plan.devices) kv += d.kv_cache_bytes;
  const std::vector<DeviceId> accels = r.budgets.accelerators();
  const std::int64_t act = r.runtime.context > 0 ? activation_bytes(tree.config(), r.runtime.batch,
                                                                    r.runtime.prefill_chunk, r.runtime.context)
                                                 : 0;
  std::string msg = "model needs " + format_bytes(static_cast<std::uint64_t>(plan.model_bytes + kv)) + " (" +
                    format_bytes(static_cast<std::uint64_t>(plan.model_bytes)) + " of " +
                    std::string(weight_dtype_name(r.dtype)) + " weights";
  if (kv > 0) {
    msg += " + " + format_bytes(static_cast<std::uint64_t>(kv)) + " KV cache for " + std::to_string(r.runtime.context) +
           " tokens × batch " + std::to_string(r.runtime.batch);
  }
  if (act > 0 && !accels.empty()) {
    msg += ", plus " + format_bytes(static_cast<std::uint64_t>(act)) + " activation workspace on each accelerator";
  }
  msg += "); ";
  if (accels.empty()) msg += "no accelerators are budgeted";
  else msg += "devices " + device_list(accels) + " allow " + format_bytes(r.budgets.accelerator_total()) + " in total";
  const auto cpu = r.budgets.get(DeviceId::cpu());
  msg += cpu ? ", cpu allows " + format_bytes(*cpu) : ", no cpu offload";
  msg += ": add cpu=… to --max-memory, allow disk offload (--offload-disk)";
  if (r.dtype != WeightDType::kInt4) {
    const WeightDType smaller = r.dtype == WeightDType::kInt8 ? WeightDType::kInt4 : WeightDType::kInt8;
    const std::int64_t s = SizedTree::build(tree, smaller).total_bytes();
    msg += ", or use --dtype " + std::string(weight_dtype_name(smaller)) + " (" +
           format_bytes(static_cast<std::uint64_t>(s)) + " of weights)";
  }
  if (r.runtime.context > 0) msg += ", or lower --context/--batch";
  throw RuntimeError(msg);
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
                     "'; use stages (plexus), or accelerate's sequential, balanced, balanced_low_0, auto");
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

void fill_report(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r, Plan* plan) {
  plan->model_bytes = sized.total_bytes();
  plan->placement = expand_placement(plan->device_map, tree);
  const ModelConfig& c = tree.config();
  const std::int64_t kv_layer =
      r.runtime.context > 0 ? checked_mul(checked_mul(kv_bytes_per_token_per_layer(c, r.dtype), r.runtime.context, "the KV cache per layer"),
                                          r.runtime.batch, "the KV cache per layer")
                            : 0;

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
      if (std::find(rep.layers.begin(), rep.layers.end(), p.layer) == rep.layers.end()) {
        rep.layers.push_back(p.layer);
        rep.kv_cache_bytes += kv_layer;
      }
    }
    if (p.module == "model.embed_tokens") rep.holds_embedding = true;
    if (p.module == "lm_head") rep.holds_lm_head = true;
  }
  const std::int64_t embed_bytes = sized.size_of("model.embed_tokens");
  const ParamInfo* head = tree.find("lm_head.weight");
  const bool tied = head != nullptr && head->tied_to.has_value();
  for (DeviceReport& rep : reports) {
    rep.read_bytes_per_token = rep.weights_bytes + rep.kv_cache_bytes;
    if (rep.holds_embedding && !(tied && rep.holds_lm_head)) rep.read_bytes_per_token -= embed_bytes;
  }
  if (r.strategy == Strategy::kStages && r.runtime.context > 0) {
    const std::int64_t act = activation_bytes(c, r.runtime.batch, r.runtime.prefill_chunk, r.runtime.context);
    for (DeviceReport& rep : reports) {
      if (rep.device.is_accelerator() && (rep.weights_bytes > 0 || !rep.layers.empty())) rep.activation_bytes = act;
    }
  }
  std::stable_sort(reports.begin(), reports.end(),
                   [](const DeviceReport& a, const DeviceReport& b) { return a.device < b.device; });
  plan->devices = std::move(reports);
}

Plan plan_model(const ModuleTree& tree, const PlanRequest& r) {
  if (r.runtime.context < 0 || r.runtime.batch < 1 || r.runtime.prefill_chunk < 1) {
    throw InputError("runtime budget: context must be >= 0 and batch >= 1 (got context " +
                     std::to_string(r.runtime.context) + ", batch " + std::to_string(r.runtime.batch) + ")");
  }
  Plan plan;
  plan.strategy = r.strategy;
  plan.dtype = r.dtype;
  plan.runtime = r.runtime;
  const SizedTree sized = SizedTree::build(tree, r.dtype);
  check_plan_sizes(tree.config(), r.dtype, sized.total_bytes(), r.runtime.context, r.runtime.batch, r.runtime.prefill_chunk);
  switch (r.strategy) {
    case Strategy::kSequential:
      plan.planned_budgets = r.budgets;
      plan.device_map = accelerate_infer_device_map(sized, plan.planned_budgets);
      break;
    case Strategy::kBalanced:
    case Strategy::kAuto:
    case Strategy::kBalancedLow0:
      plan.planned_budgets =
          accelerate_balanced_memory(sized, r.budgets, r.strategy == Strategy::kBalancedLow0, r.budgets_from_user);
      plan.device_map = accelerate_infer_device_map(sized, plan.planned_budgets);
      break;
    case Strategy::kStages: {
      plan.planned_budgets = r.budgets;
      StagePlan sp = plan_stages(sized, tree.config(), r.budgets, r.runtime);
      plan.device_map = accelerate_clean_device_map(sp.map);
      plan.notes = std::move(sp.notes);
      break;
    }
  }
  fill_report(tree, sized, r, &plan);
  bool on_disk = false;
  for (const DeviceReport& d : plan.devices) on_disk = on_disk || (d.device.kind() == TargetKind::kDisk && d.weights_bytes > 0);
  if (on_disk) {
    if (r.strategy == Strategy::kStages && !r.allow_disk) throw_does_not_fit(tree, r, plan);
    if (is_accelerate_strategy(r.strategy)) {
      plan.notes.push_back("accelerate offloads to disk when cpu is full or absent; weights on disk are read back "
                           "for every forward pass");
    }
  }
  return plan;
}

Plan plan_from_device_map(const ModuleTree& tree, const DeviceMap& map, const PlanRequest& r) {
  if (map.empty()) throw InputError("device map is empty: map at least \"\" (the whole model) to a device");
  check_device_map(tree, map, r);
  Plan plan;
  plan.strategy = r.strategy;
  plan.dtype = r.dtype;
  plan.runtime = r.runtime;
  plan.planned_budgets = r.budgets;
  plan.device_map = map;
  plan.custom = true;
  const SizedTree sized = SizedTree::build(tree, r.dtype);
  check_plan_sizes(tree.config(), r.dtype, sized.total_bytes(), r.runtime.context, r.runtime.batch, r.runtime.prefill_chunk);
  fill_report(tree, sized, r, &plan);
  for (const DeviceReport& d : plan.devices) {
    if (d.device.kind() == TargetKind::kDisk && d.weights_bytes > 0 && !r.allow_disk && !r.budgets.has(d.device)) {
      throw InputError("device map sends weights to disk but disk offload is not enabled: pass --offload-disk");
    }
    if (!d.budget_bytes) continue;
    const std::int64_t need = d.weights_bytes + d.kv_cache_bytes + d.activation_bytes;
    if (need > static_cast<std::int64_t>(*d.budget_bytes)) {
      throw InputError("device map puts " + format_bytes(static_cast<std::uint64_t>(need)) + " on device " +
                       d.device.to_string() + " (" + format_bytes(static_cast<std::uint64_t>(d.weights_bytes)) +
                       " weights" +
                       (d.kv_cache_bytes > 0 ? " + " + format_bytes(static_cast<std::uint64_t>(d.kv_cache_bytes)) + " KV cache" : std::string()) +
                       ") but its budget is " + format_bytes(*d.budget_bytes) +
                       ": move layers elsewhere or raise its --max-memory");
    }
  }
  return plan;
}

}  // namespace plexus
