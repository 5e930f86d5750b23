// The devices a multi-device run executes on, made from the planner's budgets: accelerators
// 0..N-1 as virtual CPU devices with exactly their budgets (GPUs join here with the CUDA
// backend), and the host with its "cpu" budget (else its available memory).
#pragma once
#include <cstdint>

#include "backend/device_registry.h"
#include "planner/budgets.h"

namespace plexus {

// `threads` (0: hardware threads) are split evenly over the accelerators (at least one each);
// the host device gets all of them. Accelerators without a budget get none (nothing fits).
DeviceRegistry make_run_devices(const Budgets& budgets, int threads, std::uint64_t host_available_bytes);

}  // namespace plexus
