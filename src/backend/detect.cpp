// Assembles an Inventory from the GPU probes (or virtual devices) and the host facts.
#include "backend/detect.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <thread>

#include "backend/deadline_runner.h"
#include "backend/nvml/nvml_probe.h"
#include "backend/rocm/rocm_probe.h"
#include "core/error.h"
#include "core/units.h"

namespace plexus {

std::vector<int> monitor_indices_of_cuda_gpus(const Inventory& inv, const std::vector<int>& cuda_gpus) {
  std::vector<int> out;
  for (int g : cuda_gpus) {
    const std::string name = "cuda:" + std::to_string(g);
    auto d = std::find_if(inv.devices.begin(), inv.devices.end(),
                          [&](const DeviceInfo& i) { return i.cuda_device == name && !i.virtual_on_gpu; });
    if (d == inv.devices.end()) return {};
    out.push_back(d->index);
  }
  return out;
}

Inventory virtual_inventory(int n, std::uint64_t per_device_bytes, const HostInfo& host) {
  Inventory inv;
  inv.host = host;
  inv.virtual_devices = true;
  inv.nvml_status = "skipped: --virtual-devices";
  inv.rocm_status = "skipped: --virtual-devices";
  if (per_device_bytes == 0 && n > 0) per_device_bytes = host.memory_available_bytes / static_cast<std::uint64_t>(n);
  const int threads = std::max(1, host.logical_cores / std::max(1, n));
  for (int i = 0; i < n; ++i) {
    DeviceInfo d;
    d.index = i;
    d.kind = DeviceKind::kVirtual;
    d.name = "virtual CPU device " + std::to_string(i);
    d.memory_total_bytes = per_device_bytes;
    d.memory_free_bytes = per_device_bytes;
    d.memory_used_bytes = 0;
    d.threads = threads;
    d.processes = 0;
    inv.devices.push_back(d);
  }
  inv.topology = square_matrix(static_cast<std::size_t>(n), "SHM");
  inv.p2p = square_matrix(static_cast<std::size_t>(n), "OK");
  return inv;
}

Inventory virtual_gpus_inventory(int n, const CudaAvailability& cuda, const HostInfo& host) {
  if (!cuda.usable()) {
    throw InputError("--virtual-gpus " + std::to_string(n) + " splits GPU 0, but CUDA has no GPU here: " + cuda.reason +
                     ". The devices that exist: cpu; use --virtual-devices " + std::to_string(n) + " to split the CPU instead");
  }
  const CudaGpu& gpu = cuda.gpus.front();
  Inventory inv;
  inv.host = host;
  inv.virtual_gpus = n;
  inv.cuda_status = cuda.status();
  inv.nvml_status = "skipped: --virtual-gpus";
  inv.rocm_status = "skipped: --virtual-gpus";
  if (!gpu.memory_free_bytes) {
    throw RuntimeError("--virtual-gpus " + std::to_string(n) + ": the free memory of GPU 0 (" + gpu.name +
                       ") cannot be read (cudaMemGetInfo failed): check it with nvidia-smi");
  }
  const std::uint64_t each = *gpu.memory_free_bytes / static_cast<std::uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    DeviceInfo d;
    d.index = i;
    d.kind = DeviceKind::kCuda;
    d.name = gpu.name + " (virtual, on GPU 0)";
    d.memory_total_bytes = each;
    d.memory_free_bytes = each;
    d.memory_used_bytes = 0;
    d.compute_capability = gpu.compute_capability();
    d.pci_bus_id = gpu.pci_bus_id;
    d.cuda_device = "cuda:" + std::to_string(i);
    d.virtual_on_gpu = 0;
    inv.devices.push_back(d);
  }
  inv.topology = square_matrix(static_cast<std::size_t>(n), "VGPU");
  inv.p2p = square_matrix(static_cast<std::size_t>(n), "OK");
  return inv;
}

namespace {

// "00000000:3B:00.0" (NVML) and "0000:3b:00.0" (CUDA) name one bus: domain as a number, rest lower case.
std::string normal_bus_id(const std::string& id) {
  const std::size_t colon = id.find(':');
  if (colon == std::string::npos) return id;
  std::string rest = id.substr(colon);
  for (char& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::to_string(std::strtoul(id.substr(0, colon).c_str(), nullptr, 16)) + rest;
}

bool same_gpu(const DeviceInfo& d, const CudaGpu& g) {
  if (d.kind != DeviceKind::kCuda) return false;
  if (d.uuid && !g.uuid.empty() && *d.uuid == g.uuid) return true;
  return d.pci_bus_id && !g.pci_bus_id.empty() && normal_bus_id(*d.pci_bus_id) == normal_bus_id(g.pci_bus_id);
}

// Grows the matrices of `inv` by one device linked to the others by `link` / `p2p`.
void grow_matrices(Inventory& inv, const std::vector<std::string>& link, const std::vector<std::string>& p2p) {
  const std::size_t n = inv.devices.size();  // the new device is the last
  auto grow = [&](std::vector<std::vector<std::string>>& m, const std::vector<std::string>& row) {
    for (std::size_t i = 0; i + 1 < n; ++i) m[i].push_back(row[i]);
    std::vector<std::string> last = row;
    last.push_back("X");
    m.push_back(last);
  };
  grow(inv.topology, link);
  grow(inv.p2p, p2p);
}

}  // namespace

void merge_cuda(Inventory& inv, const CudaAvailability& cuda) {
  inv.cuda_status = cuda.status();
  if (!cuda.usable()) return;
  std::vector<int> position(cuda.gpus.size(), -1);  // CUDA index -> inventory position
  for (const CudaGpu& g : cuda.gpus) {
    for (std::size_t i = 0; i < inv.devices.size(); ++i) {
      DeviceInfo& d = inv.devices[i];
      if (d.cuda_device || !same_gpu(d, g)) continue;
      d.cuda_device = "cuda:" + std::to_string(g.index);
      if (!d.compute_capability) d.compute_capability = g.compute_capability();
      position[static_cast<std::size_t>(g.index)] = static_cast<int>(i);
      break;
    }
  }
  for (const CudaGpu& g : cuda.gpus) {  // GPUs NVML did not list (no NVML library, ...)
    if (position[static_cast<std::size_t>(g.index)] >= 0) continue;
    DeviceInfo d;
    d.index = static_cast<int>(inv.devices.size());
    d.kind = DeviceKind::kCuda;
    d.name = g.name;
    d.uuid = g.uuid.empty() ? std::nullopt : std::optional<std::string>(g.uuid);
    d.pci_bus_id = g.pci_bus_id.empty() ? std::nullopt : std::optional<std::string>(g.pci_bus_id);
    d.memory_total_bytes = g.memory_total_bytes;
    d.memory_free_bytes = g.memory_free_bytes;
    if (g.memory_free_bytes) d.memory_used_bytes = g.memory_total_bytes - std::min(g.memory_total_bytes, *g.memory_free_bytes);
    d.compute_capability = g.compute_capability();
    d.cuda_device = "cuda:" + std::to_string(g.index);
    std::vector<std::string> link(inv.devices.size(), "SYS"), p2p(inv.devices.size(), "NS");
    for (std::size_t i = 0; i < inv.devices.size(); ++i) {
      for (const CudaGpu& other : cuda.gpus) {
        if (position[static_cast<std::size_t>(other.index)] != static_cast<int>(i)) continue;
        link[i] = "?";  // the CUDA runtime does not say how GPUs are linked
        p2p[i] = cuda.peer[static_cast<std::size_t>(g.index)][static_cast<std::size_t>(other.index)] ? "OK" : "NS";
      }
    }
    inv.devices.push_back(d);
    grow_matrices(inv, link, p2p);
    position[static_cast<std::size_t>(g.index)] = d.index;
  }
}

namespace {

// Appends `probe`'s devices and puts its matrices on the diagonal block; links across vendors
// go through the host ("SYS"), peer access across vendors is not supported ("NS").
void append(Inventory& inv, const NvmlProbe& probe) {
  const std::size_t old_n = inv.devices.size();
  const std::size_t n = old_n + probe.devices.size();
  auto grow = [&](std::vector<std::vector<std::string>>& m, const std::vector<std::vector<std::string>>& block,
                  const std::string& across) {
    auto grown = square_matrix(n, across);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        if (i < old_n && j < old_n) grown[i][j] = m[i][j];
        if (i >= old_n && j >= old_n) grown[i][j] = block[i - old_n][j - old_n];
      }
    m = std::move(grown);
  };
  grow(inv.topology, probe.topology, "SYS");
  grow(inv.p2p, probe.p2p, "NS");
  inv.devices.insert(inv.devices.end(), probe.devices.begin(), probe.devices.end());
}

}  // namespace

Inventory detect_devices(const DeviceOptions& options) {
  const HostInfo host = read_host_info();
  if (options.virtual_devices > 0)
    return virtual_inventory(options.virtual_devices, options.virtual_device_memory, host);
  if (options.virtual_gpus > 0)
    return virtual_gpus_inventory(options.virtual_gpus, probe_cuda(CudaFreeMemory::kGpu0), host);
  Inventory inv;
  inv.host = host;
  // Each driver is asked with a time limit (a hung driver must not hang the run): the job owns
  // what it writes, so an abandoned one writes only into memory it keeps alive itself.
  struct Probed {
    bool ok = false;
    std::string status;
    NvmlProbe probe;
  };
  const auto timeout_status = [](const char* what, std::chrono::milliseconds limit) {
    return std::string("unavailable: ") + what + " gave no answer within " + std::to_string(limit.count()) +
           " ms (a hung driver?); its GPUs are left out";
  };
  auto nvml_result = std::make_shared<Probed>();
  DeadlineRunner nvml_runner(driver_call_limit());
  const bool nvml_answered = nvml_runner.run([nvml_result, path = options.nvml_library] {
    std::string why;
    if (auto nvml = NvmlLibrary::open(path, &why)) {
      nvml_result->probe = probe_nvml(*nvml);
      nvml_result->status = "ok: " + nvml->path() + ", driver " + nvml->driver_version().value_or("unknown") + ", " +
                            std::to_string(nvml_result->probe.devices.size()) + " GPU(s)";
      nvml_result->ok = true;
    } else {
      nvml_result->status = "unavailable: " + why;
    }
  });
  inv.nvml_status = nvml_answered ? nvml_result->status : timeout_status("NVML", nvml_runner.limit());
  if (nvml_answered && nvml_result->ok) append(inv, nvml_result->probe);
  auto rocm_result = std::make_shared<Probed>();
  DeadlineRunner rocm_runner(driver_call_limit());
  const bool rocm_answered = rocm_runner.run([rocm_result, path = options.rocm_smi_library, first = static_cast<int>(inv.devices.size())] {
    std::string why;
    if (auto rocm = RocmSmiLibrary::open(path, &why)) {
      rocm_result->probe = probe_rocm(*rocm, first);
      rocm_result->status = "ok: " + std::to_string(rocm_result->probe.devices.size()) + " GPU(s)";
      rocm_result->ok = true;
    } else {
      rocm_result->status = "unavailable: " + why;
    }
  });
  inv.rocm_status = rocm_answered ? rocm_result->status : timeout_status("ROCm SMI", rocm_runner.limit());
  if (rocm_answered && rocm_result->ok) append(inv, rocm_result->probe);
  // NVML gives the free memory of the GPUs it lists: the CUDA runtime is asked only without it.
  merge_cuda(inv, probe_cuda(nvml_answered && nvml_result->ok ? CudaFreeMemory::kNone : CudaFreeMemory::kAll));
  return inv;
}

}  // namespace plexus
