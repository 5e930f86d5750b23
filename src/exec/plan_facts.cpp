// Choosing the facts a plan is predicted with.
#include "exec/plan_facts.h"

#include <algorithm>

#include "core/error.h"
#include "exec/calibrate.h"
#include "planner/run_buffers.h"
#include "planner/stage_layout.h"

namespace plexus {

HostMeasurements::HostMeasurements(int threads) : state_(std::make_shared<State>()) {
  state_->threads = threads;
  try {
    const std::string path = calibration_path();
    state_->calibration = load_calibration(path);
    if (state_->calibration) {
      state_->source = "calibrated (" + path + ")";
      return;
    }
    state_->note = "no calibration at " + path + ": this host was measured briefly for this prediction; `plexus calibrate` "
                   "measures it more thoroughly, once";
  } catch (const RuntimeError& e) {
    state_->note = std::string(e.what()) + "; this host was measured briefly for this prediction";
  }
  state_->source = "measured briefly now (no calibration file)";
}

const HostCalibration& HostMeasurements::get() const {
  if (!state_->calibration) state_->calibration = quick_host_calibration(state_->threads);
  return *state_->calibration;
}

PlanFacts plan_facts(const HostMeasurements& host, const std::optional<std::string>& gpu, int threads, int n_accelerators,
                     const Inventory* detected) {
  PlanFacts out;
  const std::string source = host.source();
  out.note = host.note();
  const int per_accelerator = threads_per_accelerator(threads, n_accelerators);
  if (gpu) {
    const std::optional<DeviceFacts> g = builtin_gpu_facts(*gpu);
    if (!g) {
      std::string names;
      for (const std::string& n : builtin_gpu_names()) names += (names.empty() ? "" : ", ") + n;
      throw InputError("--gpu: no facts for '" + *gpu + "'; known GPUs: " + names);
    }
    out.shared_host = false;
    out.facts = [g = *g, host, source, threads](int device) {
      return device == kHostDevice ? host_facts(host.get(), threads, source) : g;
    };
    out.note = "accelerators predicted as " + g->name + " (datasheet figures)";
    return out;
  }
  if (detected) {  // real GPUs: each by its name, linked as the topology says
    std::vector<DeviceFacts> each;
    std::string unknown;
    for (std::size_t i = 0; i < detected->devices.size(); ++i) {
      const DeviceInfo& d = detected->devices[i];
      if (d.kind != DeviceKind::kCuda && d.kind != DeviceKind::kRocm) return plan_facts(host, gpu, threads, n_accelerators);
      const std::optional<std::string> key = builtin_gpu_key_for(d.name, d.memory_total_bytes);
      DeviceFacts f = key ? *builtin_gpu_facts(*key) : virtual_device_facts(host.get(), per_accelerator, source);
      if (!key) unknown += (unknown.empty() ? "" : ", ") + d.name;
      bool fast_link = false;
      for (std::size_t j = 0; i < detected->topology.size() && j < detected->topology[i].size(); ++j) {
        const std::string& l = detected->topology[i][j];
        fast_link = fast_link || (j != i && (l.rfind("NV", 0) == 0 || l == "XGMI"));
      }
      if (!fast_link) {  // peers over PCIe
        f.link_bandwidth = f.host_copy_bandwidth;
        if (key) f.collective_latency_s = 25e-6;
      }
      f.name += " (detected: " + d.name + ")";
      each.push_back(f);
    }
    out.shared_host = false;
    out.note = unknown.empty() ? "detected GPUs predicted from their datasheet figures"
                               : "no datasheet facts for " + unknown + " (predicted as this host; pass --gpu NAME)";
    out.facts = [each, host, source, threads](int device) {
      if (device == kHostDevice || device >= static_cast<int>(each.size())) return host_facts(host.get(), threads, source);
      return each[static_cast<std::size_t>(device)];
    };
    return out;
  }
  out.concurrency = static_cast<double>(std::max(1, threads)) / per_accelerator;
  out.facts = [host, source, threads, per_accelerator](int device) {
    return device == kHostDevice ? host_facts(host.get(), threads, source) : virtual_device_facts(host.get(), per_accelerator, source);
  };
  return out;
}

PlanPrediction predict_for_plan(const ModuleTree& tree, const Plan& plan, const Budgets& budgets, int tp,
                                const std::optional<std::string>& gpu, const Inventory* detected) {
  int n_acc = 0;
  for (const DeviceId& d : budgets.accelerators()) n_acc = std::max(n_acc, d.ordinal() + 1);
  const int threads = plan.runtime.threads;
  const PlanFacts facts = plan_facts(HostMeasurements(threads), gpu, threads, n_acc * tp, detected);
  PredictShape shape;
  shape.concurrency = facts.concurrency;
  shape.tensor_parallel = tp;
  const FactsOf of = facts.facts;
  const FactsOf rank0 = [of, tp](int d) { return of(d == kHostDevice ? d : d * tp); };
  return {predict_plan(tree, plan, tp > 1 ? rank0 : of, facts.shared_host, shape), facts.note};
}

}  // namespace plexus
