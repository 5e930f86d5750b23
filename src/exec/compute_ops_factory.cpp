// Device kind -> compute operations.
#include "exec/compute_ops_factory.h"

#include "compute/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"
#ifdef PLEXUS_HAVE_CUDA
#include "backend/cuda/cuda_device.h"
#include "compute/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_check.h"
#endif

namespace plexus {

namespace {

#ifdef PLEXUS_HAVE_CUDA
DeviceOps make_cuda_ops(CudaDevice& device, const OpsShape& shape, DeviceMemory& memory) {
  const cuda::CudaOpsSizes sizes = cuda::CudaOpsSizes::of(shape.config->layer_shape(), shape.max_tokens, shape.max_context);
  DeviceOps d;
  d.scratch = memory.allocate(cuda::CudaOps::scratch_bytes(sizes), "scratch of the CUDA kernels (cuBLAS workspace, attention partials)");
  // The ops' cuBLAS handle, events and pinned buffer belong to the device's GPU: make it current
  // while they are made (the queue thread that launches keeps it current on its own).
  int previous = 0;
  PLEXUS_CUDA_CHECK(cudaGetDevice(&previous), device.name() + ": reading the current GPU");
  PLEXUS_CUDA_CHECK(cudaSetDevice(device.physical_device()), device.name() + ": making its GPU current");
  auto ops = std::make_unique<cuda::CudaOps>(device.compute_stream(), device.name(), sizes, d.scratch.data(), d.scratch.size());
  // Streamed weights land between a step's layers, and another stage's copy synchronizes this
  // device's stream: such steps run eagerly.
  if (shape.eager_only) ops->allow_graphs(false);
  d.ops = std::move(ops);
  cudaSetDevice(previous);
  return d;
}
#endif

}  // namespace

std::int64_t kernel_scratch_bytes(DeviceKind kind, const OpsShape& shape) {
#ifdef PLEXUS_HAVE_CUDA
  if (kind == DeviceKind::kCuda) {
    return static_cast<std::int64_t>(
        cuda::CudaOps::scratch_bytes(cuda::CudaOpsSizes::of(shape.config->layer_shape(), shape.max_tokens, shape.max_context)));
  }
#endif
  (void)kind;
  (void)shape;
  return 0;
}

DeviceOps make_compute_ops(Device& device, const IsaKernels& cpu_kernels, const OpsShape& shape, DeviceMemory& memory) {
  switch (device.kind()) {
    case DeviceKind::kCpu:
    case DeviceKind::kVirtual:
      return DeviceOps{Buffer(), std::make_unique<CpuOps>(cpu_kernels, *device.thread_pool())};
    case DeviceKind::kCuda:
#ifdef PLEXUS_HAVE_CUDA
      return make_cuda_ops(static_cast<CudaDevice&>(device), shape, memory);
#else
      throw RuntimeError(device.name() + ": this plexus was built without CUDA (rebuild where the CUDA toolkit is installed)");
#endif
    case DeviceKind::kRocm:
      break;
  }
  (void)shape;
  (void)memory;
  throw RuntimeError(device.name() + ": no kernels exist for " + device_kind_name(device.kind()) +
                     " devices yet: run on CUDA GPUs, the CPU or virtual devices (--virtual-devices N)");
}

}  // namespace plexus
