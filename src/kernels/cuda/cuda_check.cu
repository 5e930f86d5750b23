// Error checking for CUDA runtime and cuBLAS calls.
#include "kernels/cuda/cuda_check.h"

#include "core/error.h"

namespace plexus::cuda {

void check(cudaError_t status, const char* call, const std::string& what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clears a non-sticky error so later calls are not reported for it
  throw RuntimeError(what + ": " + call + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char* call, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw RuntimeError(what + ": " + call + " failed: " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

}  // namespace plexus::cuda
