// Which device facts a plan is predicted with: named GPUs from the built-in table (`--gpu`), else
// the virtual devices of this host from `plexus calibrate`'s file, else a modest default CPU
// (said in the source, with the way to calibrate).
#pragma once
#include <optional>
#include <string>

#include "backend/device_info.h"
#include "planner/cost_model.h"

namespace plexus {

struct PlanFacts {
  FactsOf facts;
  bool shared_host = true;  // virtual devices of one host
  double concurrency = 0;   // how many of them compute at once (host threads / each one's); 0: all
  std::string note;         // where the facts come from, for the report
};

// `gpu`: a built-in name (h100-sxm, …) for every accelerator, or none for this host's virtual
// devices — or, with `detected` GPUs (NVML / ROCm SMI), each one's built-in entry by its name,
// its peer link from the detected topology (NVLink / xGMI, else PCIe). `threads`: the run's
// threads (split over the accelerators as the run splits them). InputError for an unknown GPU
// name, listing the known ones.
PlanFacts plan_facts(const std::optional<std::string>& gpu, int threads, int n_accelerators,
                     const Inventory* detected = nullptr);

}  // namespace plexus
