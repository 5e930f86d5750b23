// Device detection: virtual devices when asked for, otherwise NVIDIA GPUs (NVML) then AMD GPUs
// (ROCm SMI), plus the host. Missing libraries leave the list shorter, never fail.
#pragma once
#include "backend/device_info.h"
#include "backend/device_options.h"

namespace plexus {

Inventory detect_devices(const DeviceOptions& options);

// The inventory of `n` virtual devices with `per_device_bytes` each (0: host available / n).
Inventory virtual_inventory(int n, std::uint64_t per_device_bytes, const HostInfo& host);

}  // namespace plexus
