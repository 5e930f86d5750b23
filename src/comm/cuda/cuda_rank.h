// Where one rank of a group on CUDA GPUs computes: its GPU and the stream its kernels run on.
// Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <string>

namespace plexus::cuda {

struct CudaRankPlace {
  int gpu = 0;                    // the CUDA runtime's GPU index
  cudaStream_t stream = nullptr;  // the rank's compute stream: collectives order themselves on it
  std::string name;               // "cuda:0 of rank 1", for messages
};

// Makes `gpu` the calling thread's current GPU for a scope and restores the previous one.
class GpuScope {
 public:
  GpuScope(int gpu, const std::string& what);
  ~GpuScope();
  GpuScope(const GpuScope&) = delete;
  GpuScope& operator=(const GpuScope&) = delete;

 private:
  int gpu_;
  int previous_ = -1;
};

}  // namespace plexus::cuda
