// Choosing the facts a plan is predicted with.
#include "exec/plan_facts.h"

#include <algorithm>

#include "core/error.h"
#include "exec/calibrate.h"
#include "planner/run_buffers.h"
#include "planner/stage_layout.h"

namespace plexus {

PlanFacts plan_facts(const std::optional<std::string>& gpu, int threads, int n_accelerators) {
  PlanFacts out;
  std::optional<HostCalibration> cal;
  std::string source;
  try {
    const std::string path = calibration_path();
    cal = load_calibration(path);
    source = "calibrated (" + path + ")";
    if (!cal) out.note = "no calibration at " + path + ": predictions use a modest default CPU; run plexus calibrate";
  } catch (const RuntimeError& e) {
    out.note = std::string(e.what()) + "; predictions use a modest default CPU";
  }
  if (!cal) {
    cal = default_host_calibration(threads);
    source = "default (uncalibrated)";
  }
  const int per_accelerator = threads_per_accelerator(threads, n_accelerators);
  if (gpu) {
    const std::optional<DeviceFacts> g = builtin_gpu_facts(*gpu);
    if (!g) {
      std::string names;
      for (const std::string& n : builtin_gpu_names()) names += (names.empty() ? "" : ", ") + n;
      throw InputError("--gpu: no facts for '" + *gpu + "'; known GPUs: " + names);
    }
    out.shared_host = false;
    out.facts = [g = *g, cal = *cal, source, threads](int device) {
      return device == kHostDevice ? host_facts(cal, threads, source) : g;
    };
    out.note = "accelerators predicted as " + g->name + " (datasheet figures)";
    return out;
  }
  out.concurrency = static_cast<double>(std::max(1, threads)) / per_accelerator;
  out.facts = [cal = *cal, source, threads, per_accelerator](int device) {
    return device == kHostDevice ? host_facts(cal, threads, source) : virtual_device_facts(cal, per_accelerator, source);
  };
  return out;
}

}  // namespace plexus
