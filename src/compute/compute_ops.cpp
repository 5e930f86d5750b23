// The operations a device may lack: mixture-of-experts layers where no kernels exist for them.
#include "compute/compute_ops.h"

#include "core/error.h"

namespace plexus {

void ComputeOps::moe_route(const float*, std::int64_t, const MoeRouting&, Workspace&) {
  throw RuntimeError("this device has no mixture-of-experts kernels (they run on the CPU and virtual devices)");
}

void ComputeOps::moe_experts(std::span<const ExpertWeights>, const float*, std::int64_t, const MoeRouting&, float*,
                             Workspace&) {
  throw RuntimeError("this device has no mixture-of-experts kernels (they run on the CPU and virtual devices)");
}

}  // namespace plexus
