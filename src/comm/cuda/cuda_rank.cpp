// The current-GPU scope of the CUDA collectives.
#include "comm/cuda/cuda_rank.h"

#include "kernels/cuda/cuda_check.h"

namespace plexus::cuda {

GpuScope::GpuScope(int gpu, const std::string& what) : gpu_(gpu) {
  if (cudaGetDevice(&previous_) != cudaSuccess) {
    cudaGetLastError();
    previous_ = -1;
  }
  if (previous_ != gpu_) PLEXUS_CUDA_CHECK(cudaSetDevice(gpu_), what);
}

GpuScope::~GpuScope() {
  if (previous_ >= 0 && previous_ != gpu_) cudaSetDevice(previous_);
}

}  // namespace plexus::cuda
