// What detection found: one DeviceInfo per accelerator (GPU or virtual device), the link
// between every pair, and the host. Plain values for detect, doctor, the planner and reports.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/device.h"
#include "backend/host_info.h"
#include "core/json.h"

namespace plexus {

// Fields a backend could not read stay empty and print as null / "n/a".
struct DeviceInfo {
  int index = 0;  // accelerate numbering: 0..N-1
  DeviceKind kind = DeviceKind::kVirtual;
  std::string name;
  std::optional<std::string> uuid;
  std::optional<std::uint64_t> memory_total_bytes, memory_free_bytes, memory_used_bytes;
  std::optional<std::string> compute_capability;  // "9.0"
  std::optional<std::string> driver_version;
  std::optional<std::string> pci_bus_id;
  std::optional<double> power_limit_w;
  std::optional<double> temperature_c;
  std::optional<unsigned> sm_clock_mhz, memory_clock_mhz, max_sm_clock_mhz, max_memory_clock_mhz;
  std::optional<int> processes;  // compute processes currently on the device
  std::optional<int> threads;    // CPU threads (virtual devices)
  std::optional<std::string> cuda_device;  // "cuda:2": the name runs give it (the CUDA runtime's numbering)
  std::optional<int> virtual_on_gpu;       // a virtual GPU: the physical GPU it is carved from
  // Queries that failed in a way that matters ("memory info: GPU is lost (NVML error 15)").
  std::vector<std::string> problems;
};

// Link labels as `nvidia-smi topo -m` prints them: "X" self, "NV<n>" n NVLinks, "PIX" one PCIe
// switch, "PXB" several switches, "PHB" a host bridge, "NODE" within a NUMA node, "SYS" across
// sockets; plus "XGMI" (AMD), "SHM" (virtual devices sharing host memory), "?" unknown.
struct Inventory {
  std::vector<DeviceInfo> devices;
  std::vector<std::vector<std::string>> topology;  // (n_devices, n_devices)
  std::vector<std::vector<std::string>> p2p;       // (n_devices, n_devices): "X", "OK", "NS", "?"
  HostInfo host;
  std::string nvml_status = "not probed";  // "ok: driver 550.54, 2 GPUs" or "unavailable: why"
  std::string rocm_status = "not probed";
  std::string cuda_status = "not probed";  // "ok: CUDA runtime 13.0, ..., 2 GPU(s)" or "unavailable: why"
  bool virtual_devices = false;  // devices are the host split by --virtual-devices
  int virtual_gpus = 0;          // N > 0: devices are GPU 0 split by --virtual-gpus N
};

Json to_json(const DeviceInfo& device);
// {"devices": [...], "topology": [[...]], "p2p": [[...]], "host": {...}, "sources": {...}}
Json to_json(const Inventory& inventory);

// The inverse of to_json(Inventory): what `plexus detect --json` printed (here or on another
// host). The "cpu" entry of "devices" is the host's (read from "host"); unknown keys are ignored.
// InputError naming `where` (the file), the field and the device when something is malformed.
Inventory inventory_from_json(const Json& j, const std::string& where);

// Fills an (n, n) matrix with `fill` and "X" on the diagonal.
std::vector<std::vector<std::string>> square_matrix(std::size_t n, const std::string& fill);

}  // namespace plexus
