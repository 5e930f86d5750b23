// The CPU backend: the host itself ("cpu") or one of N virtual devices that split the host,
// each with its own memory budget (enforced), its own work queue and its share of threads (and,
// within one run, the run's shared thread budget).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "backend/cpu/compute_slots.h"
#include "backend/cpu/work_queue.h"
#include "backend/device.h"
#include "core/thread_pool.h"

namespace plexus {

class CpuDevice : public Device {
 public:
  // kind is kCpu (ordinal -1, name "cpu") or kVirtual (ordinal >= 0, name "virtual:N").
  // With `slots`, each enqueued task holds min(threads, slots->size()) of them while it runs.
  // `wait`: how its thread pool's idle threads wait.
  CpuDevice(DeviceKind kind, int ordinal, std::uint64_t budget_bytes, int threads,
            std::shared_ptr<ComputeSlots> slots = nullptr, WaitPolicy wait = WaitPolicy::kAuto);
  ~CpuDevice() override;

  const std::string& name() const override { return name_; }
  DeviceKind kind() const override { return kind_; }
  int ordinal() const override { return ordinal_; }
  std::uint64_t memory_total() const override { return budget_; }
  std::uint64_t memory_free() const override;
  int threads() const override { return threads_; }
  ThreadPool* thread_pool() override;

  Buffer allocate(std::size_t bytes) override;
  void copy_from_host(Buffer& dst, std::size_t dst_offset, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes) override;
  void copy_from_device(Buffer& dst, std::size_t dst_offset, const Buffer& src, std::size_t src_offset,
                        std::size_t bytes) override;

  void enqueue(std::function<void()> work) override;
  Event record_event() override;
  void wait_event(const Event& event) override;
  void synchronize() override;

 protected:
  void release(void* data, std::size_t size) override;

 private:
  std::string describe() const;  // "virtual device 1" / "host memory (cpu)"

  DeviceKind kind_;
  int ordinal_;
  std::string name_;
  std::uint64_t budget_;
  int threads_;
  WaitPolicy wait_;
  std::shared_ptr<ComputeSlots> slots_;
  std::atomic<std::uint64_t> used_{0};
  std::once_flag pool_once_;
  std::unique_ptr<ThreadPool> pool_;
  WorkQueue queue_;  // last: its thread stops first, before the pool and the budget go away
};

}  // namespace plexus
