// Device kind -> compute operations.
#include "exec/compute_ops_factory.h"

#include "core/error.h"
#include "core/thread_pool.h"
#include "model/cpu_ops.h"

namespace plexus {

std::unique_ptr<ComputeOps> make_compute_ops(Device& device, const IsaKernels& cpu_kernels) {
  switch (device.kind()) {
    case DeviceKind::kCpu:
    case DeviceKind::kVirtual:
      return std::make_unique<CpuOps>(cpu_kernels, *device.thread_pool());
    case DeviceKind::kCuda:
    case DeviceKind::kRocm:
      break;
  }
  throw RuntimeError(device.name() + " does not compute on host threads and no kernels for it exist yet: "
                     "run on virtual devices (--virtual-devices N)");
}

}  // namespace plexus
