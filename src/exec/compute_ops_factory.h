// The compute interface of each kind of device: the one place that picks a device's kernels.
#pragma once
#include <memory>

#include "backend/device.h"
#include "kernels/cpu/isa.h"
#include "model/compute_ops.h"

namespace plexus {

// CpuOps with `cpu_kernels` on the host threads of a CPU or virtual CPU device. RuntimeError
// naming the device for a device no kernels exist for.
std::unique_ptr<ComputeOps> make_compute_ops(Device& device, const IsaKernels& cpu_kernels);

}  // namespace plexus
