// Budgets -> virtual devices + host.
#include "exec/run_devices.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "backend/cpu/cpu_device.h"
#include "planner/run_buffers.h"

namespace plexus {

int run_thread_budget(int threads) {
  return threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

DeviceRegistry make_run_devices(const Budgets& budgets, int threads, std::uint64_t host_available_bytes) {
  const int total = run_thread_budget(threads);
  int n = 0;
  for (const DeviceId& d : budgets.accelerators()) n = std::max(n, d.ordinal() + 1);
  // Every device computes under the one budget of `total` threads.
  auto slots = std::make_shared<ComputeSlots>(total);
  DeviceRegistry r;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t budget = budgets.get(DeviceId::accelerator(i)).value_or(0);
    const int share = std::max(1, total / n + (i < total % n ? 1 : 0));
    r.add_accelerator(std::make_unique<CpuDevice>(DeviceKind::kVirtual, i, budget, share, slots));
  }
  r.set_host(std::make_unique<CpuDevice>(DeviceKind::kCpu, -1, budgets.get(DeviceId::cpu()).value_or(host_available_bytes), total,
                                         slots));
  return r;
}

}  // namespace plexus
