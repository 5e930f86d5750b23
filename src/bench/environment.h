// Where a benchmark ran: CPU, GPUs and driver, host name and OS, plexus version and commit.
#pragma once
#include "backend/device_info.h"
#include "core/json.h"

namespace plexus::bench {

// Detects the real devices (GPU libraries from PLEXUS_NVML_LIBRARY / PLEXUS_ROCM_SMI_LIBRARY,
// never virtual ones) and the host.
Json environment_json();
// The same from an inventory (for tests).
Json environment_json(const Inventory& inventory);

}  // namespace plexus::bench
