// The parts of the CUDA availability answer that need no CUDA: its status line and reasons.
#include "backend/cuda_availability.h"

namespace plexus {

std::string cuda_version_text(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string CudaAvailability::status() const {
  if (usable())
    return "ok: CUDA runtime " + cuda_version_text(runtime_version) + ", driver supports CUDA " +
           cuda_version_text(driver_version) + ", " + std::to_string(gpus.size()) + " GPU(s)";
  return "unavailable: " + reason;
}

std::string describe_cuda_unavailable(CudaUnavailable why, const std::string& error_text, int driver_version,
                                      int runtime_version) {
  const std::string detail = error_text.empty() ? std::string() : " (" + error_text + ")";
  switch (why) {
    case CudaUnavailable::kNone:
      return "";
    case CudaUnavailable::kBuiltWithoutCuda:
      return "built without CUDA (no CUDA toolkit when plexus was compiled, or -DPLEXUS_CUDA=OFF)";
    case CudaUnavailable::kNoDriver:
      // The runtime's own words here ("driver version is insufficient") would suggest an update.
      return "no CUDA driver (libcuda.so.1 not found or not loadable): install the NVIDIA driver to use GPUs";
    case CudaUnavailable::kDriverTooOld:
      return "the NVIDIA driver supports CUDA " + cuda_version_text(driver_version) + ", older than plexus's CUDA runtime " +
             cuda_version_text(runtime_version) + detail + ": update the driver";
    case CudaUnavailable::kNoDevice:
      return "the CUDA driver sees no GPU" + detail + " (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    case CudaUnavailable::kOther:
      return "the CUDA runtime failed to start" + detail;
  }
  return "unknown";
}

}  // namespace plexus
