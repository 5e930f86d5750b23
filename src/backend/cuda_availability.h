// What the CUDA runtime offers this process, in plain C++ (no CUDA headers): the GPUs it sees,
// their memory, compute capability and peer access, or in one line why CUDA is unavailable.
// Always compiled; CMake links the CUDA implementation (cuda/cuda_probe.cpp) when the backend
// is built, else a stub that answers "built without CUDA". Callers need no #ifdefs.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/device.h"

namespace plexus {

// One physical GPU as the CUDA runtime numbers it (after CUDA_VISIBLE_DEVICES).
struct CudaGpu {
  int index = 0;
  std::string name;
  std::string pci_bus_id;  // "0000:3B:00.0"
  std::string uuid;        // "GPU-xxxxxxxx-...", as NVML writes it
  std::uint64_t memory_total_bytes = 0;
  std::optional<std::uint64_t> memory_free_bytes;  // read only when asked (it needs the GPU's context)
  int cc_major = 0, cc_minor = 0;
  std::string compute_capability() const { return std::to_string(cc_major) + "." + std::to_string(cc_minor); }
};

// Why the runtime is unusable; kNone when it sees at least one GPU.
enum class CudaUnavailable { kNone, kBuiltWithoutCuda, kNoDriver, kDriverTooOld, kNoDevice, kOther };

struct CudaAvailability {
  CudaUnavailable why = CudaUnavailable::kBuiltWithoutCuda;
  std::string reason;        // one line when unusable ("no CUDA driver: ..."); empty when usable
  int runtime_version = 0;   // 13000 = CUDA 13.0; 0 when built without CUDA
  int driver_version = 0;    // the CUDA version the driver supports; 0 when there is no driver
  std::vector<CudaGpu> gpus;
  std::vector<std::vector<bool>> peer;  // peer[i][j]: GPU i can access GPU j's memory (false on the diagonal)

  bool usable() const { return why == CudaUnavailable::kNone && !gpus.empty(); }
  // "ok: CUDA runtime 13.0, driver 13.0, 2 GPU(s)" or "unavailable: <reason>".
  std::string status() const;
};

// Whose free memory probe_cuda reads. Reading it creates the GPU's primary context (hundreds of
// MiB on the GPU for the life of the process), so only the GPUs a caller needs it for.
enum class CudaFreeMemory { kNone, kGpu0, kAll };

// Asks the CUDA runtime (each call asks again: keep the answer where it is needed). Never
// throws; a failing query becomes the reason.
CudaAvailability probe_cuda(CudaFreeMemory free_memory = CudaFreeMemory::kAll);

// The one-line reason for a failed runtime initialisation, from the runtime's own error name
// and message and the versions (pure, so it is tested without a GPU).
std::string describe_cuda_unavailable(CudaUnavailable why, const std::string& error_text, int driver_version,
                                      int runtime_version);
// 13020 -> "13.2".
std::string cuda_version_text(int version);

// A logical CUDA device "cuda:<ordinal>" on physical GPU `physical` (a CUDA runtime index) with
// `budget_bytes` of memory. Several logical devices may share one GPU (virtual GPUs).
// `staging_chunk_bytes` (0: the default, 8 MiB) sizes each of the two pinned staging buffers.
// Built without CUDA: throws RuntimeError.
std::unique_ptr<Device> make_cuda_device(int ordinal, int physical, std::uint64_t budget_bytes,
                                         std::size_t staging_chunk_bytes = 0);

}  // namespace plexus
