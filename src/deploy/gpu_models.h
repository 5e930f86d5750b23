// The NVIDIA GPU models deploy knows by name: each one's CUDA architecture (for the Dockerfile's
// build when the inventory has no compute capability) and its Slurm GPU type (--gres=gpu:TYPE:N).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

struct GpuModel {
  const char* key;        // a whole word of the lowercased name: "a100", "rtx 4090"
  const char* cuda_arch;  // "80" (NVIDIA's CUDA GPUs table: compute capability 8.0)
  const char* gres_type;  // the model in lowercase, spaces as '_': "a100", "rtx_4090"
};

// The model a GPU name ("NVIDIA A100-SXM4-80GB", "NVIDIA L4") names, matching the table's keys as
// whole words of the lowercased name (longer keys first, so "l40s" is not taken for "l4");
// nullptr when none matches.
const GpuModel* gpu_model_of(const std::string& gpu_name);

struct SlurmGpuType {
  std::string type;    // "" for none: --gres=gpu:N
  std::string reason;  // where it came from, or why there is none
};

// The GPU type of the Slurm files' --gres=gpu:TYPE:N: `flag` (--gpu-type) when given ("none": no
// type), else the table's type of the selected GPUs' model when they all have the same known one,
// else none. InputError when --gpu-type is not a gres type name ([A-Za-z0-9_.-], 1-64 characters)
// or is given for a CPU deployment.
SlurmGpuType slurm_gpu_type(const std::vector<SelectedGpu>& gpus, const std::optional<std::string>& flag);

}  // namespace plexus::deploy
