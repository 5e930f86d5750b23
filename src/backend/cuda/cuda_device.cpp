// CUDA memory under a budget, pinned staging copies, peer copies and the queue thread.
#include "backend/cuda/cuda_device.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <exception>

#include "backend/cuda_availability.h"
#include "core/error.h"
#include "core/units.h"
#include "kernels/cuda/cuda_check.h"

namespace plexus {

namespace {

// Makes `physical` the calling thread's current GPU for a scope and restores the previous one.
class CurrentGpu {
 public:
  CurrentGpu(int physical, const std::string& who) : physical_(physical) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != physical_) PLEXUS_CUDA_CHECK(cudaSetDevice(physical_), who);
  }
  ~CurrentGpu() {
    if (previous_ >= 0 && previous_ != physical_) cudaSetDevice(previous_);
  }
  CurrentGpu(const CurrentGpu&) = delete;
  CurrentGpu& operator=(const CurrentGpu&) = delete;

 private:
  int physical_;
  int previous_ = -1;
};

}  // namespace

CudaDevice::CudaDevice(int ordinal, int physical, std::uint64_t budget_bytes, std::size_t staging_chunk_bytes)
    : ordinal_(ordinal),
      physical_(physical),
      name_("cuda:" + std::to_string(ordinal)),
      budget_(budget_bytes),
      chunk_(staging_chunk_bytes > 0 ? staging_chunk_bytes : kDefaultStagingChunk),
      queue_(name_) {
  // A placeholder (no budget) touches no GPU: cudaSetDevice alone makes a context there.
  if (budget_ == 0) return;
  {
    CurrentGpu gpu(physical_, who() + ": selecting the GPU");
    check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "creating the compute stream");
    check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "creating the copy stream");
    check(cudaEventCreateWithFlags(&queue_event_, cudaEventDisableTiming), "cudaEventCreateWithFlags", "creating the queue's event");
  }
  // The queue thread launches this device's work: its GPU is current there for good.
  queue_.enqueue(
      [physical = physical_, who = who()] { PLEXUS_CUDA_CHECK(cudaSetDevice(physical), who + ": selecting the GPU on the queue thread"); },
      /*always_run=*/true);
}

CudaDevice::~CudaDevice() {
  try {
    queue_.synchronize();
  } catch (...) {  // an error nobody collected: the device goes anyway
  }
  if (compute_ == nullptr) return;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != physical_) cudaSetDevice(physical_);
  cudaStreamSynchronize(compute_);
  cudaStreamSynchronize(copy_);
  for (int i = 0; i < 2; ++i) {
    if (staging_[i] != nullptr) cudaFreeHost(staging_[i]);
    if (staging_done_[i] != nullptr) cudaEventDestroy(staging_done_[i]);
  }
  cudaEventDestroy(queue_event_);
  cudaStreamDestroy(copy_);
  cudaStreamDestroy(compute_);
  if (previous >= 0 && previous != physical_) cudaSetDevice(previous);
  cudaGetLastError();
}

std::string CudaDevice::who() const { return name_ + " (GPU " + std::to_string(physical_) + ")"; }

void CudaDevice::check(cudaError_t status, const char* call, const std::string& what) const {
  cuda::check(status, call, who() + ": " + what);
}

std::uint64_t CudaDevice::memory_free() const {
  const std::uint64_t used = used_.load();
  return used >= budget_ ? 0 : budget_ - used;
}

Buffer CudaDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return Buffer();
  std::uint64_t used = used_.load();
  for (;;) {
    if (used + bytes > budget_ || used + bytes < used) {
      throw RuntimeError(who() + ": cannot allocate " + format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes): " +
                         format_bytes(used) + " of its " + format_bytes(budget_) + " budget in use, " +
                         format_bytes(budget_ > used ? budget_ - used : 0) + " free; give device " +
                         std::to_string(ordinal_) + " a larger budget (--max-memory \"" + std::to_string(ordinal_) +
                         "=SIZE\"), offload layers to cpu, or use more devices");
    }
    if (used_.compare_exchange_weak(used, used + bytes)) break;
  }
  void* data = nullptr;
  cudaError_t status = cudaSuccess;
  try {
    CurrentGpu gpu(physical_, who() + ": selecting the GPU to allocate");
    status = cudaMalloc(&data, bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky: clear it before asking for free memory
      std::size_t free_bytes = 0, total_bytes = 0;
      const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
      cudaGetLastError();
      throw RuntimeError(who() + ": cudaMalloc of " + format_bytes(bytes) + " (" + std::to_string(bytes) +
                         " bytes) failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + "); GPU " +
                         std::to_string(physical_) + " has " +
                         (known ? format_bytes(free_bytes) + " free of " + format_bytes(total_bytes) : std::string("unknown free memory")) +
                         ", this device's budget is " + format_bytes(budget_) + " with " + format_bytes(used_.load() - bytes) +
                         " in use: give device " + std::to_string(ordinal_) + " a smaller budget (--max-memory \"" +
                         std::to_string(ordinal_) + "=SIZE\") so the plan offloads layers to cpu, or run fewer sequences (--max-sequences) "
                         "or a shorter --context");
    }
  } catch (...) {
    used_.fetch_sub(bytes);
    throw;
  }
  return make_buffer(data, bytes);
}

void CudaDevice::release(void* data, std::size_t size) {
  // cudaFree waits for the GPU work that may still use the memory. Errors cannot be reported from
  // here (Buffer destructors): a failed free leaves the memory to the process's exit.
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != physical_) cudaSetDevice(physical_);
  cudaFree(data);
  if (previous >= 0 && previous != physical_) cudaSetDevice(previous);
  cudaGetLastError();
  used_.fetch_sub(size);
}

void CudaDevice::copy_stream_waits_for(cudaStream_t stream, int stream_gpu, const std::string& what) {
  // Recorded with a temporary event on the stream's own GPU (events and streams of different GPUs
  // cannot be recorded together, but a stream may wait for another GPU's event).
  cudaEvent_t event = nullptr;
  {
    CurrentGpu gpu(stream_gpu, who() + ": " + what);
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags", what);
    const cudaError_t recorded = cudaEventRecord(event, stream);
    if (recorded != cudaSuccess) cudaEventDestroy(event);
    check(recorded, "cudaEventRecord", what);
  }
  const cudaError_t waited = cudaStreamWaitEvent(copy_, event, 0);
  cudaEventDestroy(event);  // released once it has completed
  check(waited, "cudaStreamWaitEvent", what);
}

void CudaDevice::ensure_staging() {
  if (staging_[0] != nullptr) return;
  for (int i = 0; i < 2; ++i) {
    check(cudaHostAlloc(&staging_[i], chunk_, cudaHostAllocPortable), "cudaHostAlloc",
          "allocating " + format_bytes(chunk_) + " of pinned host memory for staging copies");
    check(cudaEventCreateWithFlags(&staging_done_[i], cudaEventDisableTiming), "cudaEventCreateWithFlags",
          "creating a staging event");
  }
}

void CudaDevice::copy_from_host(Buffer& dst, std::size_t dst_offset, const void* src, std::size_t bytes) {
  assert(dst.device() == this && dst_offset + bytes <= dst.size());
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(staging_mutex_);
  CurrentGpu gpu(physical_, who() + ": selecting the GPU to copy from the host");
  ensure_staging();
  copy_stream_waits_for(compute_, physical_, "ordering a host-to-device copy after the compute stream");
  // Double-buffered: the host fills one pinned chunk while the other is on its way to the GPU.
  char* out = dst.as<char>() + dst_offset;
  const char* in = static_cast<const char*>(src);
  int b = 0;
  bool used[2] = {false, false};
  for (std::size_t done = 0; done < bytes; done += chunk_, b ^= 1) {
    const std::size_t n = std::min(chunk_, bytes - done);
    if (used[b]) check(cudaEventSynchronize(staging_done_[b]), "cudaEventSynchronize", "waiting for a staging buffer");
    std::memcpy(staging_[b], in + done, n);
    check(cudaMemcpyAsync(out + done, staging_[b], n, cudaMemcpyHostToDevice, copy_), "cudaMemcpyAsync",
          "copying " + format_bytes(n) + " from pinned host memory");
    check(cudaEventRecord(staging_done_[b], copy_), "cudaEventRecord", "marking a staging buffer");
    used[b] = true;
  }
  check(cudaStreamSynchronize(copy_), "cudaStreamSynchronize", "finishing a host-to-device copy of " + format_bytes(bytes));
}

void CudaDevice::copy_to_host(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes) {
  assert(src.device() == this && src_offset + bytes <= src.size());
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(staging_mutex_);
  CurrentGpu gpu(physical_, who() + ": selecting the GPU to copy to the host");
  ensure_staging();
  copy_stream_waits_for(compute_, physical_, "ordering a device-to-host copy after the compute stream");
  const char* in = src.as<const char>() + src_offset;
  char* out = static_cast<char*>(dst);
  const std::size_t chunks = (bytes + chunk_ - 1) / chunk_;
  auto issue = [&](std::size_t i) {
    const std::size_t off = i * chunk_, n = std::min(chunk_, bytes - off);
    check(cudaMemcpyAsync(staging_[i % 2], in + off, n, cudaMemcpyDeviceToHost, copy_), "cudaMemcpyAsync",
          "copying " + format_bytes(n) + " to pinned host memory");
    check(cudaEventRecord(staging_done_[i % 2], copy_), "cudaEventRecord", "marking a staging buffer");
  };
  // Double-buffered: chunk i+1 comes off the GPU while the host copies chunk i out.
  issue(0);
  for (std::size_t i = 0; i < chunks; ++i) {
    if (i + 1 < chunks) issue(i + 1);
    check(cudaEventSynchronize(staging_done_[i % 2]), "cudaEventSynchronize", "waiting for a staging buffer");
    const std::size_t off = i * chunk_, n = std::min(chunk_, bytes - off);
    std::memcpy(out + off, staging_[i % 2], n);
  }
}

void CudaDevice::enable_peer_access(int peer_physical) {
  if (peers_enabled_.count(peer_physical) != 0) return;
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer_physical, 0);  // the current GPU (ours) reaches the peer's memory
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
  } else {
    check(e, "cudaDeviceEnablePeerAccess", "enabling peer access to GPU " + std::to_string(peer_physical));
  }
  peers_enabled_.insert(peer_physical);
}

void CudaDevice::copy_peer_through_host(void* dst, const void* src, const CudaDevice& source, std::size_t bytes) {
  // No peer access: each chunk comes off the source GPU into pinned memory (on the source's copy
  // stream), then goes onto this GPU (on ours), double-buffered.
  char* out = static_cast<char*>(dst);
  const char* in = static_cast<const char*>(src);
  // The source's copy stream does not follow its compute stream: wait for the work launched there.
  if (source.compute_ != nullptr)
    check(cudaStreamSynchronize(source.compute_), "cudaStreamSynchronize", "waiting for " + source.who() + "'s compute stream");
  int b = 0;
  bool used[2] = {false, false};
  for (std::size_t done = 0; done < bytes; done += chunk_, b ^= 1) {
    const std::size_t n = std::min(chunk_, bytes - done);
    if (used[b]) check(cudaEventSynchronize(staging_done_[b]), "cudaEventSynchronize", "waiting for a staging buffer");
    check(cudaMemcpyAsync(staging_[b], in + done, n, cudaMemcpyDeviceToHost, source.copy_), "cudaMemcpyAsync",
          "copying " + format_bytes(n) + " from " + source.who() + " to pinned host memory");
    check(cudaStreamSynchronize(source.copy_), "cudaStreamSynchronize", "waiting for " + source.who() + "'s copy stream");
    check(cudaMemcpyAsync(out + done, staging_[b], n, cudaMemcpyHostToDevice, copy_), "cudaMemcpyAsync",
          "copying " + format_bytes(n) + " from pinned host memory");
    check(cudaEventRecord(staging_done_[b], copy_), "cudaEventRecord", "marking a staging buffer");
    used[b] = true;
  }
}

void CudaDevice::copy_from_device(Buffer& dst, std::size_t dst_offset, const Buffer& src, std::size_t src_offset,
                                  std::size_t bytes) {
  assert(dst.device() == this && dst_offset + bytes <= dst.size() && src_offset + bytes <= src.size());
  if (bytes == 0) return;
  Device* from = src.device();
  if (from == nullptr || from->kind() != DeviceKind::kCuda) {  // host memory (cpu, virtual devices)
    copy_from_host(dst, dst_offset, src.as<const char>() + src_offset, bytes);
    return;
  }
  auto* source = static_cast<CudaDevice*>(from);  // every kCuda device is a CudaDevice
  char* out = dst.as<char>() + dst_offset;
  const char* in = src.as<const char>() + src_offset;
  const std::string what = "copying " + format_bytes(bytes) + " from " + source->who();
  std::lock_guard<std::mutex> lock(staging_mutex_);
  CurrentGpu gpu(physical_, who() + ": " + what);
  copy_stream_waits_for(compute_, physical_, what + " (ordering after this device's compute stream)");
  if (source != this && source->compute_ != nullptr)
    copy_stream_waits_for(source->compute_, source->physical_, what + " (ordering after the source's compute stream)");
  if (source->physical_ == physical_) {
    check(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, copy_), "cudaMemcpyAsync", what);
  } else {
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, physical_, source->physical_), "cudaDeviceCanAccessPeer", what);
    if (can != 0) {
      enable_peer_access(source->physical_);
      check(cudaMemcpyPeerAsync(out, physical_, in, source->physical_, bytes, copy_), "cudaMemcpyPeerAsync", what);
    } else {
      ensure_staging();
      copy_peer_through_host(out, in, *source, bytes);
    }
  }
  check(cudaStreamSynchronize(copy_), "cudaStreamSynchronize", what);
}

void CudaDevice::enqueue(std::function<void()> work) { queue_.enqueue(std::move(work)); }

Event CudaDevice::record_event() {
  Event event;
  queue_.enqueue(
      [this, event] {
        // Complete in any case (a waiter must not hang); an error still reaches synchronize().
        try {
          if (compute_ != nullptr) {
            check(cudaEventRecord(queue_event_, compute_), "cudaEventRecord", "recording an event");
            check(cudaEventSynchronize(queue_event_), "cudaEventSynchronize", "waiting for the compute stream");
          }
        } catch (...) {
          event.mark_complete();
          throw;
        }
        event.mark_complete();
      },
      /*always_run=*/true);
  return event;
}

void CudaDevice::wait_event(const Event& event) {
  queue_.enqueue([event] { event.wait(); }, /*always_run=*/true);
}

void CudaDevice::synchronize() {
  std::exception_ptr first;
  try {
    queue_.synchronize();
  } catch (...) {
    first = std::current_exception();
  }
  if (compute_ != nullptr) {
    try {
      CurrentGpu gpu(physical_, who() + ": selecting the GPU to synchronize");
      check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize", "waiting for the compute stream");
      check(cudaStreamSynchronize(copy_), "cudaStreamSynchronize", "waiting for the copy stream");
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::unique_ptr<Device> make_cuda_device(int ordinal, int physical, std::uint64_t budget_bytes, std::size_t staging_chunk_bytes) {
  return std::make_unique<CudaDevice>(ordinal, physical, budget_bytes, staging_chunk_bytes);
}

}  // namespace plexus
