// The devices a multi-device run executes on, made from the planner's budgets: accelerators
// 0..N-1 with exactly their budgets — CUDA devices when the run is on GPUs (RunAccelerators),
// else virtual CPU devices — and the host with its "cpu" budget (else its available memory).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/device_registry.h"
#include "core/thread_pool.h"
#include "planner/budgets.h"
#include "planner/device_map.h"

namespace plexus {

// What the accelerators of a run are. Default: virtual CPU devices (no GPU, --virtual-devices,
// or budgets naming devices that stand in for GPUs the CUDA runtime cannot use).
struct RunAccelerators {
  bool cuda = false;
  // Accelerator ordinal -> the CUDA runtime's GPU index (virtual GPUs: all 0). Ordinals past
  // the end have no GPU: a budget for one is an InputError naming the GPUs that exist.
  std::vector<int> physical_gpu;
  // When cuda: "cuda:0..3 on GPUs 0..3" / "4 virtual GPUs on GPU 0" (for the run's report).
  std::string description;
};

// `threads` (0: hardware threads) are the run's budget: split over the accelerators (at least one
// each, the remainder to the first ones), all of them for the host device, and shared: devices
// computing side by side wait for free threads (backend/cpu/compute_slots.h), so the run never
// computes on more than `threads` threads. Accelerators without a budget get none (nothing fits).
// `threads`, or the hardware threads for 0.
int run_thread_budget(int threads);
// `wait`: how the CPU devices' idle pool threads wait (core/thread_pool.h).
DeviceRegistry make_run_devices(const Budgets& budgets, int threads, std::uint64_t host_available_bytes,
                                const RunAccelerators& accelerators = RunAccelerators(),
                                WaitPolicy wait = WaitPolicy::kAuto);

// The virtual CPU devices of one tensor-parallel rank in this process: as make_run_devices, with
// `threads` its share of the run's threads, but outside any shared thread budget — the ranks of a
// group wait for each other inside their collectives, so every rank must be able to compute at
// once (a budget shared across ranks could let a waiting rank hold the threads another needs).
DeviceRegistry make_rank_devices(const Budgets& budgets, int threads, std::uint64_t host_available_bytes,
                                 WaitPolicy wait = WaitPolicy::kAuto);

// The devices of a run without devices named: the host CPU device alone, computing on all of
// `threads` (0: the hardware threads) with no budget of its own (like the mmapped weights it
// reads in place, its buffers are the operating system's to refuse).
DeviceRegistry make_host_run_devices(int threads, WaitPolicy wait = WaitPolicy::kAuto);
// The device map of such a run: every module on "cpu" (read in place: the host computes it).
DeviceMap whole_model_on_host();

}  // namespace plexus
