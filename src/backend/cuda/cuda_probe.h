// The CUDA implementation of backend/cuda_availability.h's probe: how the runtime's
// initialisation errors map to a reason (the rest is in cuda_probe.cpp).
#pragma once
#include <cuda_runtime_api.h>

#include "backend/cuda_availability.h"

namespace plexus::cuda {

// cudaErrorInsufficientDriver with no driver version is "no driver", with one "too old", ...
CudaUnavailable classify_init_error(cudaError_t error, int driver_version);

}  // namespace plexus::cuda
