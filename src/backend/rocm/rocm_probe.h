// Reads every AMD GPU's facts and pairwise links through a loaded ROCm SMI.
#pragma once
#include "backend/nvml/nvml_probe.h"
#include "backend/rocm/rocm_smi_library.h"

namespace plexus {

// Devices are numbered from `first_index` (after any NVIDIA GPUs). Reuses NvmlProbe's shape.
NvmlProbe probe_rocm(const RocmSmiLibrary& rocm, int first_index);

}  // namespace plexus
