// The CUDA availability answer of a build without the CUDA backend.
#include "backend/cuda_availability.h"

#include "core/error.h"

namespace plexus {

CudaAvailability probe_cuda(CudaFreeMemory) {
  CudaAvailability a;
  a.why = CudaUnavailable::kBuiltWithoutCuda;
  a.reason = describe_cuda_unavailable(a.why, "", 0, 0);
  return a;
}

std::unique_ptr<Device> make_cuda_device(int ordinal, int, std::uint64_t, std::size_t) {
  throw RuntimeError("cuda:" + std::to_string(ordinal) + ": " + describe_cuda_unavailable(CudaUnavailable::kBuiltWithoutCuda, "", 0, 0));
}

}  // namespace plexus
