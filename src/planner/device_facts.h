// What the cost model knows about a device: memory bandwidth, FLOP/s per dtype, link and
// host-copy bandwidth, idle and busy power. From `plexus calibrate` (this machine's host, per
// thread count, for virtual devices) or from a built-in table of named GPUs (datasheet figures,
// docs/planner.md) for hypothetical plans. Plain values with JSON round trips; no measuring here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus {

struct DeviceFacts {
  std::string name;                 // "H100 SXM", "host, 1 thread"
  std::string source;               // "datasheet", "calibrated (PATH)", "measured briefly now (no calibration file)"
  double memory_bandwidth = 0;      // bytes/s the decode kernels read weights at
  double flops_f32 = 0;             // dense FLOP/s
  double flops_16bit = 0;           // bf16 / f16 dense FLOP/s
  double flops_int8 = 0;            // int8 dense OP/s
  double link_bandwidth = 0;        // bytes/s to a peer device (activations between stages)
  double host_copy_bandwidth = 0;   // bytes/s host → device (cpu-offloaded weights streaming in)
  double disk_read_bandwidth = 0;   // bytes/s from the mmapped checkpoint (disk offload)
  std::optional<double> idle_w, busy_w;  // power; none when unknown
  // Measured kernels (calibrated hosts; empty for datasheet GPUs, which use the roofline): the
  // weight bytes per second a forward of N tokens gets through (conversion, FMAs and reads
  // together), and the fixed cost of one parallel kernel launch.
  std::vector<std::pair<double, double>> weight_rate_by_tokens;  // (tokens, bytes/s), ascending tokens
  double launch_overhead_s = 0;
  // The decode kernel's rate (one token) on weights just copied into a streaming slot: the copy
  // already brought them through memory, so the kernel reads them from cache. 0: unknown.
  double streamed_weight_rate = 0;
  // Mean time for a thread asleep on an event to run again once it is signalled (a device queue
  // waiting for the previous stage or for a streamed layer's copy). 0: unknown.
  double handoff_s = 0;
  // Fixed cost of one collective between tensor-parallel ranks (all-reduce, all-gather), besides
  // its bytes over link_bandwidth. Virtual devices of one host: one wake-up of a sleeping thread
  // (handoff_s, or kDefaultHandoffS from a calibration file without it): an in-process all-reduce meets three times
  // (post, chunks summed, copies taken), but ranks arriving together mostly overlap the waits
  // (measured on a 2-core host: 21 µs per all-reduce, handoff_s 29 µs). GPUs: NCCL's
  // small-message latency (assumed, not measured here: 10 µs over NVLink / xGMI, 25 µs over PCIe).
  double collective_latency_s = 0;
};

// A thread's wake-up on an event when the calibration file does not say (µs-scale on Linux).
inline constexpr double kDefaultHandoffS = 10e-6;

Json device_facts_to_json(const DeviceFacts& f);

// One thread count's measurements of the host (plexus calibrate).
struct HostThroughput {
  int threads = 1;
  double memory_bandwidth = 0;  // bf16 weights streamed by the decode (matrix × vector) kernel
  double flops_f32 = 0, flops_16bit = 0;  // the prefill (matrix × matrix) kernels
  std::vector<std::pair<double, double>> weight_rate_by_tokens;  // (tokens, bf16 weight bytes/s) of a forward
  double launch_overhead_s = 0;           // one small matmul launched on the thread pool
  double streamed_weight_rate = 0;        // decode kernel (one token) on a block just copied into a slot; 0: unknown
};

// `plexus calibrate`'s file: the host measured at each thread count.
struct HostCalibration {
  std::string cpu;
  std::string isa;
  std::vector<HostThroughput> by_threads;  // ascending thread counts
  double copy_bandwidth = 0;               // memcpy of a large buffer: between virtual devices
  double handoff_s = 0;                    // mean wake-up of a thread sleeping on a condition variable after an idle ms; 0: unknown
  double slot_copy_bandwidth = 0;          // memcpy of layer-sized blocks into two reused slots (weight streaming); 0: unknown
  double disk_read_bandwidth = 0;          // reading the page cache through mmap
  std::optional<double> idle_w, busy_w;    // RAPL package power, when readable
  std::string created;                     // ISO 8601 time of the measurement
};

Json host_calibration_to_json(const HostCalibration& c);
// InputError naming `where` and the field when malformed.
HostCalibration host_calibration_from_json(const Json& j, const std::string& where);

// A virtual device with `threads` threads on the calibrated host (the nearest measured thread
// count at or below, scaled linearly from it).
DeviceFacts virtual_device_facts(const HostCalibration& c, int threads, const std::string& source);
// The host itself (cpu offload source, or computing when no accelerators are budgeted).
DeviceFacts host_facts(const HostCalibration& c, int threads, const std::string& source);


// Built-in datasheet facts: a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, l40s, rtx-4090,
// mi300x (case-insensitive; "_" and " " accepted for "-"). None when unknown.
std::optional<DeviceFacts> builtin_gpu_facts(const std::string& name);
std::vector<std::string> builtin_gpu_names();
// The built-in entry for a detected device's name ("NVIDIA H100 80GB HBM3" → h100-sxm,
// "NVIDIA A100-SXM4-40GB" → a100-40gb, …); none when unknown.
std::optional<std::string> builtin_gpu_key_for(const std::string& device_name, std::optional<std::uint64_t> memory_bytes);

}  // namespace plexus
