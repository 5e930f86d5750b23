// The compute interface of each kind of device: the one place that picks a device's kernels.
#pragma once
#include <cstdint>
#include <memory>

#include "backend/device.h"
#include "compute/compute_ops.h"
#include "exec/device_memory.h"
#include "kernels/cpu/isa.h"
#include "model/config.h"

namespace plexus {

// What a device's ops serve: the model, the tokens per call and the longest sequence, and
// whether a step must run eagerly: weights stream into the device during a forward, or other
// devices copy activations out of its stream between steps (several stages), so no step capture.
struct OpsShape {
  const ModelConfig* config = nullptr;
  std::int64_t max_tokens = 1;
  std::int64_t max_context = 1;
  bool eager_only = false;
};

// A device's ops and the device scratch they compute in (empty for CPU devices). Destroy the
// ops before the scratch: the member order does.
struct DeviceOps {
  Buffer scratch;
  std::unique_ptr<ComputeOps> ops;
};

// Device bytes the kernels of a `kind` device need beside the Workspace for `shape` (CUDA: the
// cuBLAS workspace, converted GEMM inputs, attention partials); 0 for CPU devices.
std::int64_t kernel_scratch_bytes(DeviceKind kind, const OpsShape& shape);

// CpuOps with `cpu_kernels` on the host threads of a CPU or virtual CPU device; CudaOps on the
// compute stream of a CUDA device, its scratch allocated from `memory` (the device's budget).
// RuntimeError naming the device for a device no kernels exist for (or a build without CUDA).
DeviceOps make_compute_ops(Device& device, const IsaKernels& cpu_kernels, const OpsShape& shape, DeviceMemory& memory);

}  // namespace plexus
