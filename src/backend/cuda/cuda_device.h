// The CUDA backend: a logical device "cuda:N" on one physical GPU with an enforced memory budget
// (plain cudaMalloc, never managed memory), a compute stream and a copy stream (non-blocking),
// pinned double-buffered staging for host copies, peer (or host-staged) copies between GPUs, and
// the Device work queue run by a host thread of its own. Several logical devices may share one
// GPU (virtual GPUs), each with its own budget and streams.
//
// Queue and events: a task runs on the device's host thread (the GPU is current there) and
// launches asynchronous work on compute_stream(). record_event() returns an Event that completes
// once every task enqueued before it has run AND the GPU work they launched has finished (the
// queue records a CUDA event on the compute stream and waits for it). wait_event() makes later
// tasks wait for an Event (of any device). synchronize() drains the queue, then both streams,
// and rethrows the first error.
//
// Copies are synchronous, as the interface says; each first waits for the GPU work launched so
// far on this device's compute stream (and the source device's), so a copy never races a kernel.
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "backend/cpu/work_queue.h"
#include "backend/device.h"

namespace plexus {

class CudaDevice : public Device {
 public:
  static constexpr std::size_t kDefaultStagingChunk = 8u << 20;

  // `ordinal`: the accelerator number ("cuda:<ordinal>"); `physical`: the CUDA runtime's GPU
  // index. A device with a budget of 0 holds nothing and touches no GPU (a placeholder ordinal
  // in a run that uses later ones): no streams (compute_stream() is null), no context.
  CudaDevice(int ordinal, int physical, std::uint64_t budget_bytes, std::size_t staging_chunk_bytes = kDefaultStagingChunk);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const std::string& name() const override { return name_; }
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  int ordinal() const override { return ordinal_; }
  std::uint64_t memory_total() const override { return budget_; }
  std::uint64_t memory_free() const override;
  int threads() const override { return 1; }  // one host thread launches its work
  ThreadPool* thread_pool() override { return nullptr; }

  Buffer allocate(std::size_t bytes) override;
  void copy_from_host(Buffer& dst, std::size_t dst_offset, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes) override;
  void copy_from_device(Buffer& dst, std::size_t dst_offset, const Buffer& src, std::size_t src_offset,
                        std::size_t bytes) override;

  void enqueue(std::function<void()> work) override;
  Event record_event() override;
  void wait_event(const Event& event) override;
  void synchronize() override;

  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t copy_stream() const { return copy_; }
  int physical_device() const { return physical_; }
  std::size_t staging_chunk_bytes() const { return chunk_; }

 protected:
  void release(void* data, std::size_t size) override;

 private:
  // "cuda:1 (GPU 0)": the logical device and the physical GPU, for messages.
  std::string who() const;
  // Throws RuntimeError "<who>: <what>: <call> failed: ..." unless `status` is cudaSuccess.
  void check(cudaError_t status, const char* call, const std::string& what) const;
  // The copy stream waits for the work launched so far on `stream` (this or another device's).
  void copy_stream_waits_for(cudaStream_t stream, int stream_gpu, const std::string& what);
  void ensure_staging();  // under staging_mutex_
  void enable_peer_access(int peer_physical);
  void copy_peer_through_host(void* dst, const void* src, const class CudaDevice& source, std::size_t bytes);

  int ordinal_;
  int physical_;
  std::string name_;
  std::uint64_t budget_;
  std::size_t chunk_;
  std::atomic<std::uint64_t> used_{0};
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  cudaEvent_t queue_event_ = nullptr;  // recorded and waited for by record_event's task (queue thread only)

  std::mutex staging_mutex_;  // one copy at a time uses the staging buffers and the copy stream
  void* staging_[2] = {nullptr, nullptr};
  cudaEvent_t staging_done_[2] = {nullptr, nullptr};
  cudaEvent_t order_event_ = nullptr;  // orders the copy stream after a compute stream
  std::set<int> peers_enabled_;

  WorkQueue queue_;  // last: destroyed first (its thread stops before the streams go)
};

}  // namespace plexus
