// The device interface every backend implements: identity, memory with an enforced budget,
// copies between host and devices, and an in-order work queue with events so devices overlap.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace plexus {

class ThreadPool;

enum class DeviceKind { kCuda, kRocm, kCpu, kVirtual };

// "cuda", "rocm", "cpu", "virtual" (the spelling used in JSON and tables).
const char* device_kind_name(DeviceKind kind);

class Device;

// Owns one allocation on one device; frees it when destroyed. Move-only.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      swap(other);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  std::size_t size() const { return size_; }
  Device* device() const { return device_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset();  // frees now; the buffer becomes empty

 private:
  friend class Device;
  Buffer(Device* device, void* data, std::size_t size) : device_(device), data_(data), size_(size) {}
  void swap(Buffer& other) noexcept;

  Device* device_ = nullptr;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// A point in a device's queue. It completes when all work enqueued before it has run; another
// device's queue (or the host) can wait on it. Copies share one state.
class Event {
 public:
  Event();
  bool query() const;  // completed?
  void wait() const;   // blocks the calling thread until completed
  void mark_complete() const;  // for backends: called by the queue when the event is reached

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
  };
  std::shared_ptr<State> state_;
};

class Device {
 public:
  virtual ~Device() = default;

  // "cpu", "virtual:0", "cuda:1": for messages and tables.
  virtual const std::string& name() const = 0;
  virtual DeviceKind kind() const = 0;
  // Accelerator number (0, 1, ...) as in accelerate device maps; -1 for the host ("cpu").
  virtual int ordinal() const = 0;
  // Budget of this device and how much of it is not allocated.
  virtual std::uint64_t memory_total() const = 0;
  virtual std::uint64_t memory_free() const = 0;
  // Threads this device computes with (its share of the host for CPU devices).
  virtual int threads() const = 0;
  // The host thread pool this device computes with, threads() wide, created on first use; nullptr
  // for devices that do not compute on host threads (GPUs). Launch from this device's queue (one
  // launch at a time), so devices compute concurrently without sharing a pool.
  virtual ThreadPool* thread_pool() { return nullptr; }

  // Allocates `bytes` (64-byte aligned). Throws RuntimeError naming the device, the request and
  // the budget when it would exceed the budget.
  virtual Buffer allocate(std::size_t bytes) = 0;

  // Synchronous copies (they do not wait for the queue: order them with synchronize() or
  // enqueue the copy). Ranges are checked: out-of-range is a programmer error (assert).
  virtual void copy_from_host(Buffer& dst, std::size_t dst_offset, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const Buffer& src, std::size_t src_offset, std::size_t bytes) = 0;
  // Copies from a buffer on any device into a buffer on this device.
  virtual void copy_from_device(Buffer& dst, std::size_t dst_offset, const Buffer& src,
                                std::size_t src_offset, std::size_t bytes) = 0;

  // Work queue: tasks run in order, one at a time, on the device's own thread. A task that
  // throws makes later tasks be skipped (events still complete) and synchronize() rethrow.
  virtual void enqueue(std::function<void()> work) = 0;
  // An event that completes when everything enqueued so far has run.
  virtual Event record_event() = 0;
  // Later work on this queue waits for `event` (typically recorded on another device).
  virtual void wait_event(const Event& event) = 0;
  // Blocks until the queue is empty; rethrows the first error of a task since the last call.
  virtual void synchronize() = 0;

 protected:
  Buffer make_buffer(void* data, std::size_t size) { return Buffer(this, data, size); }
  virtual void release(void* data, std::size_t size) = 0;

 private:
  friend class Buffer;
};

// Enqueues a copy of `bytes` from `src` into `dst` on dst's device queue (device<->device or
// host-visible buffers); `src` must stay alive until the queue has run it.
void enqueue_copy(Buffer& dst, std::size_t dst_offset, const Buffer& src, std::size_t src_offset,
                  std::size_t bytes);

}  // namespace plexus
