// Which device facts a plan is predicted with: named GPUs from the built-in table (`--gpu`), else
// this host and its virtual devices from `plexus calibrate`'s file, else from a brief measurement
// of this host made when first needed (said in the source, with the way to calibrate).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "backend/device_info.h"
#include "planner/cost_model.h"

namespace plexus {

// This host's measurements for predictions: the calibration file's when there is one, else
// quick_host_calibration(threads) taken on the first get() and kept (copies share it).
class HostMeasurements {
 public:
  // Reads calibration_path() (InputError when the file is malformed).
  explicit HostMeasurements(int threads);
  const HostCalibration& get() const;
  // "calibrated (PATH)" | "measured briefly now (no calibration file)".
  const std::string& source() const { return state_->source; }
  // Said beside the prediction when there is no file; empty otherwise.
  const std::string& note() const { return state_->note; }

 private:
  struct State {
    int threads = 0;
    std::optional<HostCalibration> calibration;
    std::string source, note;
  };
  std::shared_ptr<State> state_;
};

struct PlanFacts {
  FactsOf facts;
  bool shared_host = true;  // virtual devices of one host
  double concurrency = 0;   // how many of them compute at once (host threads / each one's); 0: all
  std::string note;         // where the facts come from, for the report
};

// `gpu`: a built-in name (h100-sxm, …) for every accelerator, or none for this host's virtual
// devices — or, with `detected` GPUs (NVML / ROCm SMI), each one's built-in entry by its name,
// its peer link from the detected topology (NVLink / xGMI, else PCIe). `threads`: the run's
// threads (split over the accelerators as the run splits them). `host`: this host's
// measurements (made once by the caller, whatever number of plans it predicts). InputError for
// an unknown GPU name, listing the known ones.
PlanFacts plan_facts(const HostMeasurements& host, const std::optional<std::string>& gpu, int threads, int n_accelerators,
                     const Inventory* detected = nullptr);

// `plexus plan`'s prediction of `plan`, made on `budgets` (its accelerators split the plan's
// threads as the run splits them) with tensor parallelism `tp` (a plan device s is predicted as
// the run's device s·tp, its rank 0): the facts plan_facts chooses, the workload the plan's own
// (a --context-token prompt, decode at half of it). `note`: where the facts come from.
struct PlanPrediction {
  Prediction predicted;
  std::string note;
};
PlanPrediction predict_for_plan(const ModuleTree& tree, const Plan& plan, const Budgets& budgets, int tp,
                                const std::optional<std::string>& gpu, const Inventory* detected = nullptr);

}  // namespace plexus
