// Checked CUDA and cuBLAS calls: a failed call throws RuntimeError naming the call, where it
// was made and the driver's message.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace plexus::cuda {

// Throws RuntimeError("<what>: <call> failed: <cudaGetErrorString>") unless `status` is cudaSuccess.
void check(cudaError_t status, const char* call, const std::string& what);
void check(cublasStatus_t status, const char* call, const std::string& what);

}  // namespace plexus::cuda

// CUDA_CHECK(cudaMalloc(&p, n), "cuda:0 allocating 4.0 GiB")
#define PLEXUS_CUDA_CHECK(call, what) ::plexus::cuda::check((call), #call, (what))
