// Host memory under a budget, memcpy copies, and a WorkQueue for the stream.
#include "backend/cpu/cpu_device.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"
#include "core/units.h"

namespace plexus {

namespace {
constexpr std::size_t kAlignment = 64;

std::string make_name(DeviceKind kind, int ordinal) {
  return kind == DeviceKind::kVirtual ? "virtual:" + std::to_string(ordinal) : std::string("cpu");
}
}  // namespace

CpuDevice::CpuDevice(DeviceKind kind, int ordinal, std::uint64_t budget_bytes, int threads,
                     std::shared_ptr<ComputeSlots> slots, WaitPolicy wait)
    : kind_(kind),
      ordinal_(ordinal),
      name_(make_name(kind, ordinal)),
      budget_(budget_bytes),
      threads_(threads < 1 ? 1 : threads),
      wait_(wait),
      slots_(std::move(slots)),
      queue_(name_) {
  assert(kind == DeviceKind::kCpu || kind == DeviceKind::kVirtual);
}

CpuDevice::~CpuDevice() = default;

std::uint64_t CpuDevice::memory_free() const {
  const std::uint64_t used = used_.load();
  return used >= budget_ ? 0 : budget_ - used;
}

std::string CpuDevice::describe() const {
  return kind_ == DeviceKind::kVirtual ? "virtual device " + std::to_string(ordinal_) : "host memory (cpu)";
}

Buffer CpuDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return Buffer();
  std::uint64_t used = used_.load();
  for (;;) {
    if (used + bytes > budget_ || used + bytes < used) {
      const std::string knob = kind_ == DeviceKind::kVirtual
                                   ? "give device " + std::to_string(ordinal_) + " a larger budget (--max-memory \"" +
                                         std::to_string(ordinal_) +
                                         "=SIZE\" on generate, perplexity, batch and plan; backend.max_memory in a "
                                         "benchmark), use more devices or place less on device " +
                                         std::to_string(ordinal_)
                                   : "free host memory or offload to disk";
      throw RuntimeError(describe() + ": cannot allocate " + format_bytes(bytes) + " (" +
                         std::to_string(bytes) + " bytes): " + format_bytes(used) + " of its " +
                         format_bytes(budget_) + " budget in use, " + format_bytes(budget_ - used) +
                         " free; " + knob);
    }
    if (used_.compare_exchange_weak(used, used + bytes)) break;
  }
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded);
  if (data == nullptr) {
    used_.fetch_sub(bytes);
    throw RuntimeError(describe() + ": the host could not provide " + format_bytes(bytes) +
                       " (within budget, but the system is out of memory): lower the budget or free memory");
  }
  return make_buffer(data, bytes);
}

void CpuDevice::release(void* data, std::size_t size) {
  std::free(data);
  used_.fetch_sub(size);
}

void CpuDevice::copy_from_host(Buffer& dst, std::size_t dst_offset, const void* src, std::size_t bytes) {
  assert(dst_offset + bytes <= dst.size());
  if (bytes != 0) std::memcpy(dst.as<char>() + dst_offset, src, bytes);
}

void CpuDevice::copy_to_host(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes) {
  assert(src_offset + bytes <= src.size());
  if (bytes != 0) std::memcpy(dst, src.as<const char>() + src_offset, bytes);
}

void CpuDevice::copy_from_device(Buffer& dst, std::size_t dst_offset, const Buffer& src,
                                 std::size_t src_offset, std::size_t bytes) {
  assert(dst_offset + bytes <= dst.size() && src_offset + bytes <= src.size());
  if (bytes == 0) return;
  // A GPU buffer comes to host memory through its own device's copy.
  if (Device* from = src.device(); from != nullptr && from->kind() != DeviceKind::kCpu && from->kind() != DeviceKind::kVirtual) {
    from->copy_to_host(dst.as<char>() + dst_offset, src, src_offset, bytes);
    return;
  }
  std::memmove(dst.as<char>() + dst_offset, src.as<const char>() + src_offset, bytes);
}

ThreadPool* CpuDevice::thread_pool() {
  std::call_once(pool_once_, [this] { pool_ = std::make_unique<ThreadPool>(threads_, wait_); });
  return pool_.get();
}

void CpuDevice::enqueue(std::function<void()> work) {
  if (!slots_) {
    queue_.enqueue(std::move(work));
    return;
  }
  queue_.enqueue([slots = slots_, k = threads_, work = std::move(work)] {
    slots->acquire(k);
    try {
      work();
    } catch (...) {
      slots->release(k);
      throw;
    }
    slots->release(k);
  });
}

Event CpuDevice::record_event() {
  Event event;
  queue_.enqueue([event] { event.mark_complete(); }, /*always_run=*/true);
  return event;
}

void CpuDevice::wait_event(const Event& event) {
  queue_.enqueue([event] { event.wait(); }, /*always_run=*/true);
}

void CpuDevice::synchronize() { queue_.synchronize(); }

}  // namespace plexus
