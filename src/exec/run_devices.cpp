// Budgets -> CUDA or virtual CPU devices + host.
#include "exec/run_devices.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "backend/cpu/cpu_device.h"
#include "backend/cuda_availability.h"
#include "core/error.h"
#include "planner/run_buffers.h"

namespace plexus {

int run_thread_budget(int threads) {
  return threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

DeviceRegistry make_run_devices(const Budgets& budgets, int threads, std::uint64_t host_available_bytes,
                                const RunAccelerators& accelerators, WaitPolicy wait) {
  const int total = run_thread_budget(threads);
  int n = 0;
  for (const DeviceId& d : budgets.accelerators()) n = std::max(n, d.ordinal() + 1);
  // Every device computes under the one budget of `total` threads.
  auto slots = std::make_shared<ComputeSlots>(total);
  DeviceRegistry r;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t budget = budgets.get(DeviceId::accelerator(i)).value_or(0);
    if (accelerators.cuda) {
      const bool has_gpu = static_cast<std::size_t>(i) < accelerators.physical_gpu.size();
      if (!has_gpu && budget > 0) {
        throw InputError("device " + std::to_string(i) + " has a budget but no GPU: the CUDA devices are cuda:0..cuda:" +
                         std::to_string(static_cast<int>(accelerators.physical_gpu.size()) - 1) + " (" +
                         accelerators.description + "); drop device " + std::to_string(i) +
                         " from --max-memory / --devices / --device-map");
      }
      // A placeholder ordinal (no budget) holds nothing: it creates no streams on its GPU.
      r.add_accelerator(make_cuda_device(i, has_gpu ? accelerators.physical_gpu[static_cast<std::size_t>(i)] : 0, budget));
      continue;
    }
    const int share = std::max(1, total / n + (i < total % n ? 1 : 0));
    r.add_accelerator(std::make_unique<CpuDevice>(DeviceKind::kVirtual, i, budget, share, slots, wait));
  }
  r.set_host(std::make_unique<CpuDevice>(DeviceKind::kCpu, -1, budgets.get(DeviceId::cpu()).value_or(host_available_bytes), total,
                                         slots, wait));
  return r;
}

DeviceRegistry make_rank_devices(const Budgets& budgets, int threads, std::uint64_t host_available_bytes, WaitPolicy wait) {
  const int total = run_thread_budget(threads);
  int n = 0;
  for (const DeviceId& d : budgets.accelerators()) n = std::max(n, d.ordinal() + 1);
  DeviceRegistry r;
  for (int i = 0; i < n; ++i) {
    const int share = std::max(1, total / n + (i < total % n ? 1 : 0));
    r.add_accelerator(std::make_unique<CpuDevice>(DeviceKind::kVirtual, i, budgets.get(DeviceId::accelerator(i)).value_or(0),
                                                  share, nullptr, wait));
  }
  r.set_host(std::make_unique<CpuDevice>(DeviceKind::kCpu, -1, budgets.get(DeviceId::cpu()).value_or(host_available_bytes), total,
                                         nullptr, wait));
  return r;
}

DeviceRegistry make_host_run_devices(int threads, WaitPolicy wait) {
  // Large enough never to refuse, small enough that sums with it do not overflow.
  constexpr std::uint64_t kUnbudgeted = std::uint64_t{1} << 60;
  DeviceRegistry r;
  r.set_host(std::make_unique<CpuDevice>(DeviceKind::kCpu, -1, kUnbudgeted, run_thread_budget(threads), nullptr, wait));
  return r;
}

DeviceMap whole_model_on_host() {
  DeviceMap all;
  all.set("", DeviceId::cpu());
  return all;
}

}  // namespace plexus
