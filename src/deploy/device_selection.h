// Which of the target host's GPUs a deployment uses: the ones --devices names, the fewest that
// hold the plan (--auto-select), or all of them; and the CUDA architectures they need.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/device_info.h"
#include "deploy/deploy_spec.h"

namespace plexus::deploy {

// Bytes as deploy's messages give memory: "12.0 GiB" (one decimal).
std::string gib_text(std::uint64_t bytes);

// The inventory's GPUs (CUDA devices, detect's numbering). Virtual CPU devices are not GPUs;
// an inventory of virtual GPUs (--virtual-gpus) or of ROCm GPUs is refused (InputError).
std::vector<SelectedGpu> inventory_gpus(const Inventory& inventory, const std::string& where);

// --devices 0,1: those GPUs, in the order given; InputError naming a device that does not
// exist and listing those that do.
DeviceSelection select_named(const std::vector<SelectedGpu>& gpus, const std::vector<long long>& indices);
// Neither flag: every GPU (none: a CPU deployment, reason saying so).
DeviceSelection select_all(const std::vector<SelectedGpu>& gpus, int host_cores);

// What a trial plan on some GPUs gives: the most any one GPU must hold, or why it does not fit.
struct FitResult {
  bool fits = false;
  std::int64_t per_gpu_bytes = 0;  // fits: the largest GPU share of the plan
  std::string why;                 // !fits: the planner's message
};
using FitCheck = std::function<FitResult(const std::vector<SelectedGpu>&)>;

// --auto-select: the GPUs by free memory (most first, then by index), the fewest of them whose
// plan fits, trying the counts `counts` allows in increasing order (e.g. tensor-parallel shapes,
// TGI's shards that divide the heads). InputError with the planner's message when even the
// largest allowed count does not fit. The reason says why these GPUs.
DeviceSelection auto_select(const std::vector<SelectedGpu>& gpus, const FitCheck& fit,
                            const std::function<bool(int)>& count_allowed);

// "9.0" -> "90"; without a compute capability, from the GPU's name (a small table: H100/H200/
// GH200 -> 90, A100/A30/A10/A40 ... see the .cpp, B200 -> 100, L40S/L4/RTX 4090 -> 89). InputError
// asking for an inventory from the target when neither tells.
std::string cuda_architecture(const SelectedGpu& gpu);
// The selected GPUs' architectures, each once, ascending.
std::vector<std::string> cuda_architectures(const std::vector<SelectedGpu>& gpus);

// "0,2,3"
std::string gpu_list(const std::vector<SelectedGpu>& gpus);

}  // namespace plexus::deploy
