// The operations a device may lack: mixture-of-experts layers where no kernels exist for them;
// the experts a device holds.
#include "compute/compute_ops.h"

#include <cassert>

#include "core/error.h"

namespace plexus {

const ExpertWeights& first_held_expert(std::span<const ExpertWeights> experts) {
  for (const ExpertWeights& e : experts) {
    if (e.held()) return e;
  }
  assert(false && "a mixture-of-experts layer holds one expert at least on every rank");
  return experts.front();
}

void ComputeOps::moe_route(const float*, std::int64_t, const MoeRouting&, Workspace&) {
  throw RuntimeError("this device has no mixture-of-experts kernels (they run on the CPU and virtual devices)");
}

void ComputeOps::moe_experts(std::span<const ExpertWeights>, const float*, std::int64_t, const MoeRouting&, float*,
                             Workspace&) {
  throw RuntimeError("this device has no mixture-of-experts kernels (they run on the CPU and virtual devices)");
}

}  // namespace plexus
