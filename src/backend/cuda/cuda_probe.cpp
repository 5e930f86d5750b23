// Asks the CUDA runtime for its GPUs: count, names, memory, compute capability, peer access.
#include "backend/cuda/cuda_probe.h"

#include <cstdio>

namespace plexus {

namespace cuda {

CudaUnavailable classify_init_error(cudaError_t error, int driver_version) {
  switch (error) {
    case cudaSuccess:
      return CudaUnavailable::kNone;
    case cudaErrorInsufficientDriver:
      return driver_version == 0 ? CudaUnavailable::kNoDriver : CudaUnavailable::kDriverTooOld;
    case cudaErrorStubLibrary:
      return CudaUnavailable::kNoDriver;
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return CudaUnavailable::kDriverTooOld;
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable:
      return CudaUnavailable::kNoDevice;
    default:
      return CudaUnavailable::kOther;
  }
}

namespace {

std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

std::string uuid_text(const cudaUUID_t& uuid) {
  static const int kGroups[] = {4, 2, 2, 2, 6};
  std::string out = "GPU";
  int byte = 0;
  for (int g : kGroups) {
    out += '-';
    for (int i = 0; i < g; ++i, ++byte) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[byte]));
      out += hex;
    }
  }
  return out;
}

}  // namespace
}  // namespace cuda

CudaAvailability probe_cuda(CudaFreeMemory free_memory) {
  CudaAvailability a;
  cudaRuntimeGetVersion(&a.runtime_version);
  if (cudaDriverGetVersion(&a.driver_version) != cudaSuccess) a.driver_version = 0;
  int count = 0;
  const cudaError_t init = cudaGetDeviceCount(&count);
  cudaGetLastError();  // a failed initialisation is reported here, not by the next call
  if (init != cudaSuccess || count <= 0) {
    a.why = init != cudaSuccess ? cuda::classify_init_error(init, a.driver_version) : CudaUnavailable::kNoDevice;
    a.reason = describe_cuda_unavailable(a.why, init != cudaSuccess ? cuda::error_text(init) : "", a.driver_version,
                                         a.runtime_version);
    return a;
  }
  int previous = 0;
  cudaGetDevice(&previous);
  for (int i = 0; i < count; ++i) {
    CudaGpu g;
    g.index = i;
    cudaDeviceProp p{};
    if (const cudaError_t e = cudaGetDeviceProperties(&p, i); e != cudaSuccess) {
      cudaGetLastError();
      a.why = CudaUnavailable::kOther;
      a.reason = "GPU " + std::to_string(i) + " cannot be queried (cudaGetDeviceProperties: " + cuda::error_text(e) +
                 "): check nvidia-smi";
      a.gpus.clear();
      return a;
    }
    g.name = p.name;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.memory_total_bytes = p.totalGlobalMem;
    g.uuid = cuda::uuid_text(p.uuid);
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) g.pci_bus_id = bus;
    else cudaGetLastError();
    // Free memory needs the GPU's primary context (the one a run then uses).
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool wanted = free_memory == CudaFreeMemory::kAll || (free_memory == CudaFreeMemory::kGpu0 && i == 0);
    if (!wanted) {
      // left unknown: no context made on this GPU
    } else if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      g.memory_free_bytes = free_bytes;
    } else {
      cudaGetLastError();
    }
    a.gpus.push_back(g);
  }
  cudaSetDevice(previous);
  cudaGetLastError();
  a.peer.assign(static_cast<std::size_t>(count), std::vector<bool>(static_cast<std::size_t>(count), false));
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j) {
      int can = 0;
      if (i != j && cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess) a.peer[i][j] = can != 0;
      cudaGetLastError();
    }
  a.why = CudaUnavailable::kNone;
  return a;
}

}  // namespace plexus
