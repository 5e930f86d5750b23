// Per-device report of a tensor × pipeline parallel run.
#include "planner/parallel_plan.h"

#include <cstdio>

#include "core/units.h"
#include "planner/report_text.h"
#include "model/tensor_split.h"
#include "planner/plan_report.h"
#include "planner/sized_tree.h"

namespace plexus {
namespace {

// Rank r's shard placed by the plan's map: its per-device reports (plan devices).
std::vector<DeviceReport> rank_reports(const ModuleTree& full, const Plan& plan, const PlanRequest& request, TensorSplit s) {
  const ModuleTree tree = s.size > 1 ? shard_module_tree(full, s) : full;
  PlanRequest req = request;
  req.runtime = plan.runtime;  // the context as the plan clamped it
  Plan p;
  p.strategy = plan.strategy;
  p.custom = plan.custom;
  p.dtype = plan.dtype;
  p.device_map = plan.device_map;
  p.planned_budgets = plan.planned_budgets;
  p.runtime = plan.runtime;
  fill_report(tree, SizedTree::build(tree, plan.dtype), req, &p);
  return p.devices;
}

void add_to(DeviceReport& sum, const DeviceReport& x) {
  sum.weights_bytes += x.weights_bytes;
  sum.kv_cache_bytes += x.kv_cache_bytes;
  sum.activation_bytes += x.activation_bytes;
  sum.streaming_bytes += x.streaming_bytes;
  sum.run_buffers_bytes += x.run_buffers_bytes;
  sum.total_bytes += x.total_bytes;
  sum.read_bytes_per_token += x.read_bytes_per_token;
  sum.streaming_slots = std::max(sum.streaming_slots, x.streaming_slots);
  if (sum.layers.empty()) sum.layers = x.layers;
  sum.holds_embedding = sum.holds_embedding || x.holds_embedding;
  sum.holds_lm_head = sum.holds_lm_head || x.holds_lm_head;
}

using report_text::pad;
using report_text::rpad;
using report_text::bytes;

}  // namespace

ParallelPlan parallel_plan(const ModuleTree& full, const Plan& plan, const PlanRequest& request, int tp, int pp,
                           const Budgets& run_budgets, bool whole_experts) {
  ParallelPlan out;
  out.tp = tp;
  out.pp = pp;
  if (whole_experts) out.experts = full.config().moe.num_experts;
  std::vector<std::vector<DeviceReport>> ranks;
  for (int r = 0; r < tp; ++r) ranks.push_back(rank_reports(full, plan, request, TensorSplit{r, tp, whole_experts}));
  const std::vector<DeviceId> run_acc = run_budgets.accelerators();
  auto find = [](const std::vector<DeviceReport>& reports, DeviceId d) -> const DeviceReport* {
    for (const DeviceReport& x : reports)
      if (x.device == d) return &x;
    return nullptr;
  };
  for (int s = 0; s < pp; ++s) {
    for (int r = 0; r < tp; ++r) {
      const int d = s * tp + r;
      ParallelDevice x;
      x.device = DeviceId::accelerator(d);
      x.tp_rank = r;
      x.pp_stage = s;
      if (whole_experts) {
        const ExpertRange e = local_experts(full.config(), TensorSplit{r, tp, true});
        x.experts = {e.first, e.count};
      }
      if (static_cast<std::size_t>(d) < run_acc.size()) x.budget_bytes = run_budgets.get(run_acc[static_cast<std::size_t>(d)]);
      const DeviceId stage = DeviceId::accelerator(s);
      if (const DeviceReport* rep = find(ranks[static_cast<std::size_t>(r)], stage)) {
        x.report = *rep;
      } else {
        x.report.device = stage;
      }
      out.devices.push_back(x);
    }
  }
  for (const DeviceId host : {DeviceId::cpu(), DeviceId::disk()}) {
    ParallelDevice x;
    x.device = host;
    x.report.device = host;
    bool used = false;
    for (const std::vector<DeviceReport>& reports : ranks) {
      if (const DeviceReport* rep = find(reports, host); rep && rep->total_bytes > 0) {
        add_to(x.report, *rep);
        used = true;
      }
    }
    if (!used) continue;
    x.budget_bytes = run_budgets.get(host);
    out.devices.push_back(x);
  }
  for (const ParallelDevice& x : out.devices) out.weights_bytes += x.report.weights_bytes;
  return out;
}

Json parallel_devices_to_json(const ParallelPlan& p) {
  Json devs = Json::array();
  for (const ParallelDevice& x : p.devices) {
    Json j = device_report_to_json(x.report);
    j["device"] = x.device.to_json();
    j["tp_rank"] = x.tp_rank ? Json(*x.tp_rank) : Json(nullptr);
    j["pp_stage"] = x.pp_stage ? Json(*x.pp_stage) : Json(nullptr);
    j["budget_bytes"] = x.budget_bytes ? Json(*x.budget_bytes) : Json(nullptr);
    if (x.experts) j["experts"] = Json{{"first", x.experts->first}, {"count", x.experts->second}};
    devs.push_back(j);
  }
  return devs;
}

std::string parallel_plan_to_table(const ParallelPlan& p) {
  std::string out = "tensor parallel " + std::to_string(p.tp) + " × pipeline parallel " + std::to_string(p.pp) + ": " +
                    std::to_string(p.tp * p.pp) + " devices, device = stage·" + std::to_string(p.tp) +
                    " + tp rank; weights on all devices " + format_bytes(static_cast<std::uint64_t>(p.weights_bytes)) +
                    (p.tp > 1 ? " (split weights once, embedding and norms on every rank)" : "") +
                    (p.experts > 0 ? "; expert parallel: tp rank r holds experts r·" + std::to_string(p.experts / p.tp) + " … r·" +
                                         std::to_string(p.experts / p.tp) + " + " + std::to_string(p.experts / p.tp - 1) + " of the " +
                                         std::to_string(p.experts) + " of each mixture layer, whole"
                                   : "") +
                    "\n\n";
  out += pad("device", 8) + pad("tp rank", 9) + pad("stage", 7) + pad("layers", 14) + pad("other", 18) + rpad("weights", 12) +
         rpad("kv cache", 12) + rpad("scratch", 12) + rpad("streaming", 12) + rpad("total", 12) + rpad("budget", 12) +
         rpad("used", 8) + "\n";
  for (const ParallelDevice& x : p.devices) {
    const DeviceReport& d = x.report;
    std::string other;
    if (d.holds_embedding) other += "embed";
    if (d.holds_lm_head) other += std::string(other.empty() ? "" : "+") + (p.tp > 1 ? "lm_head/" + std::to_string(p.tp) : "lm_head");
    std::string pct = "-";
    if (x.budget_bytes && *x.budget_bytes > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(d.total_bytes) / static_cast<double>(*x.budget_bytes));
      pct = buf;
    }
    out += pad(x.device.to_string(), 8) + pad(x.tp_rank ? std::to_string(*x.tp_rank) : "all", 9) +
           pad(x.pp_stage ? std::to_string(*x.pp_stage) : "-", 7) + pad(d.layers.empty() ? "-" : format_ranges(d.layers), 14) +
           pad(other.empty() ? "-" : other, 18) + rpad(bytes(d.weights_bytes), 12) + rpad(bytes(d.kv_cache_bytes), 12) +
           rpad(bytes(d.activation_bytes), 12) + rpad(bytes(d.streaming_bytes), 12) + rpad(bytes(d.total_bytes), 12) +
           rpad(x.budget_bytes ? format_bytes(*x.budget_bytes) : std::string("-"), 12) + rpad(pct, 8) + "\n";
  }
  return out;
}

}  // namespace plexus
