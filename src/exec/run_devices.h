// The devices a multi-device run executes on, made from the planner's budgets: accelerators
// 0..N-1 as virtual CPU devices with exactly their budgets (GPUs join here with the CUDA
// backend), and the host with its "cpu" budget (else its available memory).
#pragma once
#include <cstdint>

#include "backend/device_registry.h"
#include "planner/budgets.h"

namespace plexus {

// `threads` (0: hardware threads) are the run's budget: split over the accelerators (at least one
// each, the remainder to the first ones), all of them for the host device, and shared: devices
// computing side by side wait for free threads (backend/cpu/compute_slots.h), so the run never
// computes on more than `threads` threads. Accelerators without a budget get none (nothing fits).
// `threads`, or the hardware threads for 0.
int run_thread_budget(int threads);
DeviceRegistry make_run_devices(const Budgets& budgets, int threads, std::uint64_t host_available_bytes);

}  // namespace plexus
