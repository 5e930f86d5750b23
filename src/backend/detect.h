// Device detection: virtual devices when asked for, otherwise NVIDIA GPUs (NVML) then AMD GPUs
// (ROCm SMI), merged with what the CUDA runtime sees, plus the host. Missing libraries leave the
// list shorter, never fail. Virtual GPUs (--virtual-gpus N) list GPU 0 split into N devices.
#pragma once
#include "backend/cuda_availability.h"
#include "backend/device_info.h"
#include "backend/device_options.h"

namespace plexus {

// With options.virtual_gpus and no GPU for them: InputError naming why (virtual_gpus_inventory).
Inventory detect_devices(const DeviceOptions& options);

// GPU 0 of `cuda` split into `n` devices cuda:0..cuda:n-1, each with 1/n of its free memory.
// InputError when the CUDA runtime has no GPU: why not, and what exists instead.
Inventory virtual_gpus_inventory(int n, const CudaAvailability& cuda, const HostInfo& host);

// Adds what the CUDA runtime sees to `inv`: a GPU NVML already lists (same UUID or PCI bus id)
// gets its CUDA name ("cuda:K") and compute capability; one NVML missed is appended. Sets
// inv.cuda_status.
void merge_cuda(Inventory& inv, const CudaAvailability& cuda);

// The monitor's GPU indices (DeviceInfo::index, as `plexus detect` numbers them) of the GPUs the
// CUDA runtime numbers `cuda_gpus`, for watching only the GPUs a run computes on; empty when one of
// them is not in `inv` (then watch them all).
std::vector<int> monitor_indices_of_cuda_gpus(const Inventory& inv, const std::vector<int>& cuda_gpus);

// The inventory of `n` virtual devices with `per_device_bytes` each (0: host available / n).
Inventory virtual_inventory(int n, std::uint64_t per_device_bytes, const HostInfo& host);

}  // namespace plexus
