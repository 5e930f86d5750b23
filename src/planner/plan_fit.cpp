// Fit checks, the spread-out fallback and refusals with the smallest budgets.
#include "planner/plan_fit.h"

#include <algorithm>
#include <array>

#include "core/error.h"
#include "core/units.h"
#include "planner/report_text.h"
#include "planner/accelerate_planner.h"

namespace plexus {

namespace {
using report_text::fb;
}  // namespace

// Devices whose weights and run buffers exceed what the run gives them.
std::vector<const DeviceReport*> overfull(const Plan& plan) {
  std::vector<const DeviceReport*> out;
  for (const DeviceReport& d : plan.devices) {
    if (d.capacity_bytes && d.total_bytes > static_cast<std::int64_t>(*d.capacity_bytes)) out.push_back(&d);
  }
  return out;
}

std::string need_text(const DeviceReport& d) {
  std::string s = fb(d.total_bytes) + " (" + fb(d.weights_bytes) + " weights + " + fb(d.run_buffers_bytes) +
                  " run buffers: KV cache " + fb(d.kv_cache_bytes) + ", scratch " + fb(d.activation_bytes);
  if (d.streaming_bytes > 0) s += ", streaming " + fb(d.streaming_bytes);
  return s + ")";
}

// Smallest run: every module offloaded (cpu if it holds them, else disk), computed by the first
// accelerator (or the host) through one streaming slot.
Plan smallest_plan(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r) {
  Plan p;
  p.strategy = r.strategy;
  p.dtype = r.dtype;
  p.runtime = r.runtime;
  p.planned_budgets = r.budgets;
  DeviceMap m;
  const auto cpu = r.budgets.get(DeviceId::cpu());
  m.set("", cpu && static_cast<std::int64_t>(*cpu) >= sized.total_bytes() ? DeviceId::cpu() : DeviceId::disk());
  p.device_map = m;
  fill_report(tree, sized, r, &p);
  return p;
}

// When the stages fill cannot fit the run buffers (typically the KV cache of offloaded layers
// piling up on the last accelerator), spread the computing instead: contiguous layer segments,
// one per accelerator, each anchored by its first layer kept resident and the rest streamed from
// cpu (or disk), segments as long as each device holds; then as many resident layers as fit. The
// head goes to the first accelerator that holds it, else stays offloaded. None when nothing fits.
std::optional<Plan> spread_layer_segments(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r) {
  const int L = tree.config().num_layers;
  std::vector<DeviceId> accs;
  for (const DeviceBudget& b : r.budgets.list())
    if (b.device.is_accelerator() && b.bytes > 0) accs.push_back(b.device);
  if (accs.empty() || L == 0) return std::nullopt;
  const auto cpu = r.budgets.get(DeviceId::cpu());
  DeviceId off = DeviceId::cpu();
  if (!cpu || static_cast<std::int64_t>(*cpu) < sized.total_bytes()) {
    if (!r.allow_disk) return std::nullopt;
    off = DeviceId::disk();
  }
  Plan p;
  p.strategy = r.strategy;
  p.dtype = r.dtype;
  p.runtime = r.runtime;
  p.planned_budgets = r.budgets;
  // seg[k] = (first layer, end layer, resident layers) of accelerator k.
  auto build = [&](const std::vector<std::array<int, 3>>& seg, const DeviceId& head) {
    DeviceMap m;
    m.set("model.embed_tokens", off);
    for (std::size_t k = 0; k < seg.size(); ++k) {
      for (int l = seg[k][0]; l < seg[k][1]; ++l) {
        m.set(ModuleTree::layer_prefix(l), l < seg[k][0] + seg[k][2] ? accs[k] : off);
      }
    }
    m.set("model.norm", head);
    m.set("lm_head", head);
    p.device_map = accelerate_clean_device_map(m);
    p.notes.clear();
    fill_report(tree, sized, r, &p);
  };
  auto fits = [&](const DeviceId& d) {
    for (const DeviceReport* x : overfull(p))
      if (x->device == d) return false;
    return true;
  };
  std::vector<DeviceId> heads(accs);
  heads.push_back(off);
  for (const DeviceId& head : heads) {
    std::vector<std::array<int, 3>> seg;
    int start = 0;
    bool ok = true;
    for (std::size_t k = 0; k < accs.size() && ok; ++k) {
      const bool last = k + 1 == accs.size();
      // The longest segment device k holds (one resident layer), the rest anchored on k + 1.
      auto holds = [&](int end) {
        std::vector<std::array<int, 3>> trial = seg;
        trial.push_back({start, end, 1});
        if (end < L) trial.push_back({end, L, 1});
        build(trial, head);
        return fits(accs[k]);
      };
      int lo = start, hi = last ? L : L - 1;  // lo: known to hold (start means none)
      if (last) {
        if (!holds(L)) ok = false;
        lo = L;
      } else {
        while (lo < hi) {
          const int mid = lo + (hi - lo + 1) / 2;
          if (holds(mid)) lo = mid;
          else hi = mid - 1;
        }
      }
      if (!ok) break;
      if (lo == start) continue;  // device k holds no segment: the next one starts here
      // As many resident layers as fit.
      int res_lo = 1, res_hi = lo - start;
      auto holds_res = [&](int res) {
        std::vector<std::array<int, 3>> trial = seg;
        trial.push_back({start, lo, res});
        if (lo < L) trial.push_back({lo, L, 1});
        build(trial, head);
        return fits(accs[k]);
      };
      while (res_lo < res_hi) {
        const int mid = res_lo + (res_hi - res_lo + 1) / 2;
        if (holds_res(mid)) res_lo = mid;
        else res_hi = mid - 1;
      }
      seg.push_back({start, lo, res_lo});
      start = lo;
      if (start == L) break;
    }
    if (!ok || start != L) continue;
    build(seg, head);
    if (overfull(p).empty()) {
      bool streams = false;
      for (const std::array<int, 3>& x : seg) streams = streams || x[2] < x[1] - x[0];
      p.notes.push_back(std::string("the run buffers leave too little room for the balanced stages: each accelerator "
                                    "computes one segment of layers with its own KV cache") +
                        (streams ? ", its first layers resident and the rest streamed from " + off.to_string() : ""));
      return p;
    }
  }
  return std::nullopt;
}

// InputError: the budgets cannot hold this plan, with each device's need and the smallest
// budget that runs anything at all.
[[noreturn]] void throw_overfull(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r, const Plan& plan) {
  std::string msg = "the run does not fit its budgets: ";
  bool first = true;
  for (const DeviceReport* d : overfull(plan)) {
    msg += std::string(first ? "" : "; ") + "device " + d->device.to_string() + " needs " + need_text(*d) +
           " but its budget is " + format_bytes(*d->capacity_bytes);
    first = false;
  }
  msg += ". " + smallest_budgets_text(tree, sized, r) + "; raise the budgets, or lower --context (" +
         std::to_string(plan.runtime.context) + "), --max-sequences (" + std::to_string(r.runtime.batch) + ") or --batch-tokens (" +
         std::to_string(r.runtime.prefill_chunk) + ")";
  throw InputError(msg);
}

std::string smallest_budgets_text(const ModuleTree& tree, const SizedTree& sized, const PlanRequest& r) {
  PlanRequest with_cpu = r;  // without disk offload the weights go to cpu, which the printed budgets then include
  if (!r.allow_disk) with_cpu.budgets.set(DeviceId::cpu(), static_cast<std::uint64_t>(sized.total_bytes()));
  const Plan small = smallest_plan(tree, sized, with_cpu);
  std::string mins;
  for (const DeviceReport& d : small.devices) {
    if (d.device.kind() == TargetKind::kDisk || d.total_bytes == 0) continue;
    mins += (mins.empty() ? "" : ",") + d.device.to_string() + "=" + format_budget(static_cast<std::uint64_t>(d.total_bytes));
  }
  return "The smallest budgets that run this model (everything offloaded, streamed through one slot) are --max-memory " + mins;
}

}  // namespace plexus
